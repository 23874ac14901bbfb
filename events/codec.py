"""Stored form of events: a msgspec envelope, a tag-keyed decoder, upcasters and the mapper.

The topic stored beside each record is the event's versioned tag, never a Python import
path, so classes can move freely. Bytes are deterministic JSON: the hash chain covers them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final, Generic, TypeVar
from uuid import UUID

import msgspec
from eventsourcing.persistence import Mapper, StoredEvent, Transcoder

from apexmem.events.base import Event
from apexmem.events.catalogue import EVENT_CLASSES, tag_of
from apexmem.events.erasure import blanked, erased_payload, is_blank
from apexmem.events.errors import IntegrityViolation
from apexmem.events.timeutil import UtcDateTime

__all__ = [
    "Pending",
    "Stored",
    "TaggedMapper",
    "decode",
    "encode",
    "encode_many",
    "register_upcaster",
]

E = TypeVar("E", bound=Event)

Upcaster = Callable[[bytes], tuple[str, bytes]]


# gc=False: one per appended event, never part of a reference cycle (see Event).
class Stored(msgspec.Struct, Generic[E], frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """What one record's state holds: the envelope and the payload."""

    recorded_at: UtcDateTime
    actor: str | None = None
    episode: str | None = None
    cause: str | None = None
    data: E


class Pending(msgspec.Struct, frozen=True, kw_only=True):
    """An event stamped by the log and about to be stored (eventsourcing's domain event)."""

    originator_id: UUID
    originator_version: int
    stored: Stored[Any]


_encoder: Final = msgspec.json.Encoder(order="deterministic")
_decoders: Final[dict[str, msgspec.json.Decoder[Stored[Any]]]] = {
    tag: msgspec.json.Decoder(Stored[cls])  # type: ignore[valid-type]
    for tag, cls in EVENT_CLASSES.items()
}
_upcasters: dict[str, Upcaster] = {}


def encode(stored: Stored[Any]) -> bytes:
    """Deterministic JSON bytes (fields in declared order): equal events give equal bytes."""
    return _encoder.encode(stored)


def encode_many(
    recorded_at: datetime,
    envelopes: Sequence[tuple[str | None, str | None, str | None]],
    payloads: Sequence[Event],
) -> list[bytes]:
    """`encode` of one Stored per (actor, episode, cause) envelope and payload, all recorded
    at `recorded_at`, as the same bytes.

    A record is its envelope's JSON, then the payload's, then `}` (`data` is the last field
    of Stored); the payloads are encoded in one call, as lines (JSON escapes every line
    break inside a string), and each envelope once: about half the time of one Stored
    encoded per event.
    """
    heads: dict[tuple[str | None, str | None, str | None], bytes] = {}
    for envelope in envelopes:
        if envelope not in heads:
            actor, episode, cause = envelope
            head = _encoder.encode(
                Stored(recorded_at=recorded_at, actor=actor, episode=episode, cause=cause, data=0)
            )
            heads[envelope] = head[: -len(_DATA_END)]
    lines = _encoder.encode_lines(payloads).splitlines()  # bytes split at \n and \r only
    return [heads[e] + line + b"}" for e, line in zip(envelopes, lines, strict=True)]


_DATA_END: Final = b"0}"
"""How a Stored made with `data=0` ends (encode_many cuts it off its envelope's bytes)."""


def decode(tag: str, state: bytes) -> Stored[Any]:
    """Decode a record by its tag, upcasting tags whose class is gone.

    A record blanked by an erasure (`events.erasure`) decodes to its kept envelope and an
    `Erased` payload, whatever its tag (checked only when the tag's decoder fails).
    """
    seen = 0
    if tag not in _decoders and is_blank(state):
        return _blanked(state)
    while tag not in _decoders:
        upcaster = _upcasters.get(tag)
        if upcaster is None or seen > len(_upcasters):
            raise IntegrityViolation(f"stored tag {tag!r} has no event class and no upcaster")
        tag, state = upcaster(state)
        seen += 1
    try:
        return _decoders[tag].decode(state)
    except msgspec.DecodeError as e:
        if is_blank(state):
            return _blanked(state)
        raise IntegrityViolation(f"stored {tag} record does not decode: {e}") from e


def _blanked(state: bytes) -> Stored[Any]:
    try:
        kept = blanked(state)
    except msgspec.DecodeError as e:
        raise IntegrityViolation(f"a blanked record does not decode: {e}") from e
    return Stored(
        recorded_at=kept.recorded_at,
        actor=kept.actor,
        episode=kept.episode,
        cause=kept.cause,
        data=erased_payload(),
    )


def register_upcaster(old_tag: str, upcaster: Upcaster) -> None:
    """Route records stored under `old_tag` through `upcaster` to a newer (tag, bytes)."""
    if old_tag in EVENT_CLASSES:
        raise ValueError(f"{old_tag!r} still has a class; upcast only tags whose class is gone")
    _upcasters[old_tag] = upcaster


class _JsonTranscoder(Transcoder):
    def encode(self, obj: Any) -> bytes:
        return _encoder.encode(obj)

    def decode(self, data: bytes) -> Any:
        return msgspec.json.decode(data)


class TaggedMapper(Mapper[UUID]):
    """eventsourcing mapper whose topic is the event's tag and whose state is msgspec JSON."""

    def __init__(self) -> None:
        super().__init__(transcoder=_JsonTranscoder())

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        """Map a stamped event to the record eventsourcing's recorder inserts."""
        assert isinstance(domain_event, Pending)
        return StoredEvent(
            originator_id=domain_event.originator_id,
            originator_version=domain_event.originator_version,
            topic=tag_of(domain_event.stored.data),
            state=encode(domain_event.stored),
        )

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        """Map a record back to the stamped event it was made from."""
        originator_id = stored_event.originator_id
        return Pending(
            originator_id=originator_id if isinstance(originator_id, UUID) else UUID(originator_id),
            originator_version=stored_event.originator_version,
            stored=decode(stored_event.topic, stored_event.state),
        )
