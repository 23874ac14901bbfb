"""Erasure in the log: the event that records one, and the blanked records it leaves.

A forget request blanks the records that hold the erased content in place (the one change
the log ever makes to a stored record) and appends, in the same transaction, a
`records-erased.v1` event that lists each blanked position with the chain hash stored
there. `verify` accepts a blanked position only when a later, chained erasure event
vouches for it with that hash (docs/explanation/erasure.md).

A blanked record keeps its envelope (transaction time, actor, episode, idempotency key):
identifiers and times stay, the payload goes. Its bytes start with `{"erased":true`, which
no event's record does (every record starts with its `recorded_at`), and it decodes to
`Erased`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Final, Literal, Protocol
from uuid import UUID

import msgspec

from apexmem.events.base import MAX_REF_BYTES, Event
from apexmem.events.timeutil import UtcDateTime

__all__ = [
    "BLANK_PREFIX",
    "ERASED_TAG",
    "Erased",
    "RecordsErased",
    "Scope",
    "Vouch",
    "blank",
    "blanked",
    "erased_payload",
    "is_blank",
    "redacted_receipt",
    "vouches_after",
]

Scope = Literal["entity", "episode"]
ERASED_TAG: Final = "records-erased.v1"
BLANK_PREFIX: Final = b'{"erased":true'
"""How every blanked record's bytes begin."""


class RecordsErased(Event, frozen=True, kw_only=True, tag="records-erased.v1"):
    """Records were erased on request: their payloads were blanked in place.

    `target` is the stream id of the entity or episode forgotten (an identifier, never a
    name); `positions` the blanked positions, `chains` the chain hash stored at each and
    `blanks` the blake3 hash of the blanked bytes left there (hex, in the same order): what
    `verify` checks a blanked position against.
    """

    scope: Scope
    target: UUID
    entity_type: str | None = None
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_REF_BYTES)]
    positions: list[int]
    chains: list[str]
    blanks: list[str]


class Erased(Event, frozen=True, kw_only=True, tag="record-erased"):
    """The payload of a blanked record as read back: nothing but the fact that it was.

    Never appended (it has no place in the catalogue): projections and folds pass over it,
    and a stream's version still counts it.
    """


class _Blank(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The bytes of a blanked record: a marker first, then the original envelope."""

    erased: bool
    recorded_at: str
    actor: str | None = None
    episode: str | None = None
    cause: str | None = None


class _Envelope(msgspec.Struct, frozen=True):
    recorded_at: str
    actor: str | None = None
    episode: str | None = None
    cause: str | None = None


class _BlankRead(msgspec.Struct, frozen=True):
    recorded_at: UtcDateTime
    actor: str | None = None
    episode: str | None = None
    cause: str | None = None


_encoder: Final = msgspec.json.Encoder(order="deterministic")
_envelope: Final = msgspec.json.Decoder(_Envelope)
_blank_read: Final = msgspec.json.Decoder(_BlankRead)
_ERASED: Final = Erased()


Vouch = tuple[int, bytes, bytes, int, bytes]
"""What an erasure committed to for one position it blanked: (position, chain hash, blake3
of the blanked bytes, the erasure's position, the erasure's chain hash)."""


class _ReadsErasures(Protocol):
    def read(
        self, *, start: int = 1, stop: int | None = None, tags: Sequence[str] = (),
        limit: int | None = None,
    ) -> Iterator[Any]: ...  # fmt: skip

    def chains(self, positions: Sequence[int]) -> dict[int, bytes]: ...


def vouches_after(log: _ReadsErasures, until: int) -> list[Vouch]:
    """What the erasures after position `until` committed to for positions up to it: what
    a copy of the log cut at `until` keeps to verify its blanked records by."""
    found: list[Vouch] = []
    events = list(log.read(start=until + 1, tags=(ERASED_TAG,)))
    heads = log.chains([e.position for e in events])
    for event in events:
        data = event.data
        if not isinstance(data, RecordsErased):
            continue
        for p, chain, kept in zip(data.positions, data.chains, data.blanks, strict=False):
            if p <= until:
                vouch = (p, bytes.fromhex(chain), bytes.fromhex(kept))
                found.append((*vouch, event.position, heads.get(event.position, b"")))
    return found


_RECEIPT_TEXT: Final = frozenset({"alias", "name", "text", "fact", "summary", "value"})
"""Fields of a receipt (the results stored with an idempotency key) that may hold text."""


def redacted_receipt(receipt: bytes) -> bytes:
    """A receipt with every text field emptied, its shape kept: a retry of the key still
    gets one result per command, with ids, positions and outcomes, and no erased text."""

    def redacted(value: Any) -> Any:
        if isinstance(value, list):
            return [redacted(v) for v in value]
        if isinstance(value, dict):
            return {
                k: "" if k in _RECEIPT_TEXT and isinstance(v, str) else redacted(v)
                for k, v in value.items()
            }
        return value

    try:
        return _encoder.encode(redacted(msgspec.json.decode(receipt)))
    except msgspec.DecodeError:
        return b"[]"


def blank(state: bytes) -> bytes:
    """The blanked form of a stored record: its envelope kept, its payload gone.

    Blanking a blanked record gives it back unchanged.
    """
    envelope = _envelope.decode(state)
    if is_blank(state):
        return bytes(state)
    return _encoder.encode(
        _Blank(
            erased=True,
            recorded_at=envelope.recorded_at,
            actor=envelope.actor,
            episode=envelope.episode,
            cause=envelope.cause,
        )
    )


def is_blank(state: bytes | bytearray | memoryview) -> bool:
    """Whether these stored bytes are a blanked record."""
    return bytes(state[: len(BLANK_PREFIX)]) == BLANK_PREFIX


def blanked(state: bytes) -> _BlankRead:
    """The envelope a blanked record kept (its payload reads as `Erased`)."""
    return _blank_read.decode(state)


def erased_payload() -> Erased:
    """The payload every blanked record reads as."""
    return _ERASED
