"""What a log takes and gives: new and recorded events, raw records, append results, keys.

Every log implementation (`events.log` on SQLite, `events.memory_log` in memory) shares
these types and the checks and encoding of one append (`encoded`), so their records and
chains are the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any, Final, NamedTuple
from uuid import UUID

import msgspec

from apexmem.events.base import MAX_KEY_BYTES, MAX_REF_BYTES, Event
from apexmem.events.catalogue import tag_of
from apexmem.events.codec import decode, encode_many
from apexmem.events.episode import MessageRecorded
from apexmem.events.errors import ValidationError
from apexmem.events.fact import FactAsserted
from apexmem.events.located import locates

__all__ = [
    "FOUND_BY",
    "AppendResult",
    "KeyedAppend",
    "Lookup",
    "NewEvent",
    "RawRecord",
    "RecordedEvent",
    "check_key",
    "encoded",
    "lookup_key",
    "parse_key",
    "recorded",
]


# gc=False: made by the thousand per batch and never part of a reference cycle.
class NewEvent(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An event to append at `version` of `stream_id`, with its provenance."""

    stream_id: UUID
    version: int
    data: Event
    actor: str | None = None
    episode: str | None = None
    cause: str | None = None


# gc=False: read by the thousand (a projection batch) and never part of a reference cycle,
# so the cyclic garbage collector need not track it.
class RecordedEvent(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An event as the log holds it: its position, stream, version, envelope and payload."""

    position: int
    stream_id: UUID
    version: int
    tag: str
    recorded_at: datetime
    actor: str | None
    episode: str | None
    cause: str | None
    data: Any


class RawRecord(msgspec.Struct, frozen=True):
    """One position as stored, for verification: the record (if any) and its chain hash (if
    any), or why the chain row covering it is unusable (`problem`)."""

    position: int
    stream_id: str | None
    version: int | None
    tag: str | None
    state: bytes | None
    recorded_at: int | None
    chain: bytes | None
    problem: str | None = None


class AppendResult(msgspec.Struct, frozen=True, kw_only=True):
    """Positions written by one append (or by the first append with the same idempotency key)."""

    positions: list[int]
    recorded_at: datetime | None
    repeated: bool = False
    receipt: bytes | None = None
    """What the caller stored with the idempotency key (for example, its encoded results)."""


class KeyedAppend(msgspec.Struct, frozen=True):
    """One idempotency key as stored: the positions of the append made with it (None for
    an empty append) and its transaction time in microseconds, for `verify`."""

    key: str
    first_position: int | None
    last_position: int | None
    recorded_at: int


FOUND_BY: Final[dict[str, tuple[type, str]]] = {
    "fact": (FactAsserted, "fact_id"),
    "message": (MessageRecorded, "message_id"),
}
"""The events `find` finds by a located id (`events.located`): each key prefix's class and
the id's field."""
_LOCATED: Final[dict[type, tuple[str, str, Callable[[Any], UUID]]]] = {
    cls: (prefix, field, attrgetter(field)) for prefix, (cls, field) in FOUND_BY.items()
}
"""The same by class: key prefix, id field and a getter of the id."""


class Lookup(NamedTuple):
    """What a lookup key names: the class of the event, its id field and the located id."""

    cls: type
    field: str
    located: UUID

    def matches(self, data: object) -> bool:
        """Whether `data` is the event this key names."""
        return isinstance(data, self.cls) and getattr(data, self.field) == self.located


def parse_key(key: str) -> Lookup | None:
    """The lookup a key (`fact:<id>`, `message:<id>`) names, or None when `find` knows no
    such key."""
    prefix, _, rest = key.partition(":")
    wanted = FOUND_BY.get(prefix)
    if wanted is None:
        return None
    try:
        located = UUID(rest)
    except ValueError:
        return None
    return Lookup(wanted[0], wanted[1], located)


def lookup_key(data: Event) -> str | None:
    """The key under which `find` finds an event again by its id (facts and messages)."""
    located = _LOCATED.get(type(data))
    return None if located is None else f"{located[0]}:{located[2](data)}"


def recorded(position: int, stream: UUID, version: int, tag: str, state: bytes) -> RecordedEvent:
    """The recorded event a stored row holds (its payload decoded, upcast if need be)."""
    stored = decode(tag, state)
    return RecordedEvent(
        position=position,
        stream_id=stream,
        version=version,
        tag=tag,
        recorded_at=stored.recorded_at,
        actor=stored.actor,
        episode=stored.episode,
        cause=stored.cause,
        data=stored.data,
    )


def encoded(events: Sequence[NewEvent], recorded_at: datetime) -> tuple[list[str], list[bytes]]:
    """The tag and stored bytes of each event of one append, after checking its envelope.

    Raises ValidationError, before anything is written, for an actor, episode or cause that
    would not decode, and for a fact or message whose id is not located where it is
    appended (`find` could not find it).
    """
    tags: list[str] = []
    envelopes: list[tuple[str | None, str | None, str | None]] = []
    payloads: list[Event] = []
    located_classes = _LOCATED
    for i, e in enumerate(events):
        data = e.data
        actor, episode, cause = e.actor, e.episode, e.cause
        # Four bytes a character at most: a short string is within the limit unencoded.
        if (actor is not None and (type(actor) is not str or len(actor) > _SHORT_REF)) or (
            episode is not None and (type(episode) is not str or len(episode) > _SHORT_REF)
        ):
            _check_refs(i, actor, episode)
        if cause is not None and type(cause) is not str:
            raise ValidationError(f"[{i}].cause", cause, "is not a string")
        tags.append(tag_of(data))
        envelopes.append((actor, episode, cause))
        payloads.append(data)
        located = located_classes.get(type(data))
        if located is not None and not locates(located[2](data), e.stream_id, e.version):
            raise ValidationError(
                f"[{i}].data.{located[1]}",
                str(located[2](data)),
                f"is not the located id of version {e.version} of stream {e.stream_id} (its "
                "first 12 bytes are the stream's, its last 4 the version: apexmem.events.located)",
            )
    return tags, encode_many(recorded_at, envelopes, payloads)


def check_key(key: object) -> None:
    """An idempotency key is stored with the append and in every event's envelope (`cause`),
    which decodes as a string: anything else would be written and then fail every read."""
    if not isinstance(key, str) or not key:
        raise ValidationError("idempotency_key", key, "is not a non-empty string")
    if len(key) * 4 > MAX_KEY_BYTES and len(key.encode()) > MAX_KEY_BYTES:
        raise ValidationError(
            "idempotency_key", key[:57] + "...", f"is longer than {MAX_KEY_BYTES} bytes"
        )


_SHORT_REF: Final = MAX_REF_BYTES // 4


def _check_refs(i: int, actor: object, episode: object) -> None:
    """An event's actor and episode are strings of at most MAX_REF_BYTES bytes (or None):
    anything else would be written and then fail every read of the log."""
    for field, value in (("actor", actor), ("episode", episode)):
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValidationError(f"[{i}].{field}", value, "is not a string")
        if len(value.encode()) > MAX_REF_BYTES:
            raise ValidationError(
                f"[{i}].{field}", value, f"is longer than {MAX_REF_BYTES} bytes (UTF-8)"
            )
