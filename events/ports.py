"""The log as a contract: what every append-only, hash-chained log offers its callers.

`events.log.EventLog` (SQLite) and `events.memory_log.InMemoryLog` implement these;
tests/contract runs the same tests against each. A new backend implements `Log` and joins
the contract suite's `log` fixture.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol
from uuid import UUID

from apexmem.events.envelope import (
    AppendResult,
    KeyedAppend,
    NewEvent,
    RawRecord,
    RecordedEvent,
)

__all__ = ["LockedLog", "Log", "LogAccess", "LogReads"]


class LogReads(Protocol):
    """What deciding a write reads of a log: streams, lookup keys, idempotency keys, what
    changed since a position, and the last position."""

    def read_streams(
        self, stream_ids: Sequence[UUID], *, after_version: int = 0
    ) -> dict[UUID, list[RecordedEvent]]:
        """Events of many streams at once, keyed by stream (only those with events), each
        oldest first."""
        ...

    def read_stream(self, stream_id: UUID, *, after_version: int = 0) -> list[RecordedEvent]:
        """Every event of one stream after `after_version`, oldest first."""
        ...

    def find(self, key: str) -> RecordedEvent | None:
        """The event stored under a lookup key (`fact:<id>`, `message:<id>`), if any."""
        ...

    def repeated(self, idempotency_key: str) -> AppendResult | None:
        """The first append made with this idempotency key, if there was one."""
        ...

    def changed_since(self, position: int) -> tuple[list[UUID], list[str]]:
        """The streams appended to after `position`, and the tags appended (sorted)."""
        ...

    def last_position(self) -> int:
        """The highest position written so far (0 for an empty log)."""
        ...


class LogAccess(LogReads, Protocol):
    """What the write path needs of a log: the reads, and an atomic append."""

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        idempotency_key: str | None = None,
        receipt: bytes | None = None,
    ) -> AppendResult:
        """Append all events atomically, chained and time-indexed; a reused idempotency key
        writes nothing and returns the first append's positions and `receipt`.

        Raises ConcurrencyError when a (stream, version) is already taken, ValidationError
        for an envelope that would not decode; either way nothing is written.
        """
        ...


class LockedLog(LogAccess, Protocol):
    """A log under its write lock: what is read inside is current, and the appends made
    inside are committed together when the lock is released (nothing of them on an error)."""

    @property
    def appended(self) -> int:
        """Events appended under this lock so far (repeated keys count none)."""
        ...

    def last_position(self) -> int:
        """The highest position written so far (0 for an empty log)."""
        ...

    def read_after(self, position: int) -> Iterator[RecordedEvent]:
        """The events appended after `position`, in order."""
        ...


class Log(LogAccess, Protocol):
    """The one ordered, hash-chained, append-only log of a memory."""

    def locked(self) -> AbstractContextManager[LockedLog]:
        """Hold the write lock; a conflict inside raises ConcurrencyError from the block and
        rolls back what was appended under it."""
        ...

    def read(
        self,
        *,
        start: int = 1,
        stop: int | None = None,
        tags: Sequence[str] = (),
        limit: int | None = None,
    ) -> Iterator[RecordedEvent]:
        """Events in position order from `start` to `stop` (inclusive), optionally by tag;
        `limit` caps how many."""
        ...

    def last_position(self) -> int:
        """The highest position written so far (0 for an empty log)."""
        ...

    def last_recorded_at(self) -> datetime | None:
        """The transaction time of the latest append (None for an empty log)."""
        ...

    def count(self) -> int:
        """How many events the log holds."""
        ...

    def position_at(self, when: datetime) -> int:
        """The last position recorded at or before `when` (0 if none): the log as known then."""
        ...

    def chains(self, positions: Sequence[int]) -> dict[int, bytes]:
        """The chain hash stored at each of these positions (those that have one)."""
        ...

    def raw_records(self, *, start: int = 1) -> Iterator[RawRecord]:
        """Every position that has a record or a chain hash, with both as stored (what
        `replay.verify` recomputes the chain from)."""
        ...

    def keyed_appends(self) -> Iterator[KeyedAppend]:
        """Every idempotency key as stored, in key order: what `replay.verify` checks against
        the chained records (a key names the positions of the append made with it)."""
        ...

    def encode_ahead(self, events: Sequence[NewEvent]) -> None:
        """Check and encode `events` before the write lock, for the next append of these very
        objects by this thread; a log that gains nothing by it does nothing."""
        ...

    def close(self) -> None:
        """Release what the log holds open; its records stay."""
        ...
