"""A log held in memory: the SQLite log's semantics and chain, for fast tests and as a model.

Records are stored as the SQLite log stores them (tag and encoded bytes, chained with the
same blake3 links), so `replay.verify` verifies it and its chain hashes equal a SQLite
log's for the same events and clock. As with SQLite, reads outside the write lock see only
what was committed. Nothing survives `close`.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import NamedTuple
from uuid import UUID

from apexmem.events.chain import GENESIS, links
from apexmem.events.envelope import (
    AppendResult,
    KeyedAppend,
    NewEvent,
    RawRecord,
    RecordedEvent,
    check_key,
    encoded,
    parse_key,
    recorded,
)
from apexmem.events.erasure import Erased
from apexmem.events.errors import ConcurrencyError
from apexmem.events.located import location
from apexmem.events.timeutil import from_micros, to_micros

__all__ = ["InMemoryLog", "LockedInMemoryLog"]

Clock = Callable[[], datetime]


class _Row(NamedTuple):
    stream: UUID
    version: int
    tag: str
    state: bytes
    micros: int
    chain: bytes


class _Key(NamedTuple):
    positions: range
    micros: int
    receipt: bytes | None


class InMemoryLog:
    """An append-only, hash-chained log in memory (see `events.ports.Log`)."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        """An empty log on `clock` (the current UTC time by default)."""
        self._clock: Clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.RLock()
        self._rows: list[_Row] = []  # position p is _rows[p - 1]
        self._at: dict[tuple[UUID, int], int] = {}  # (stream, version) -> position
        self._streams: dict[UUID, list[int]] = {}  # each stream's positions, in append order
        self._located: dict[tuple[int, int], list[int]] = {}  # (12-byte prefix, version)
        self._times: list[int] = []  # each append's transaction time, increasing
        self._ends: list[int] = []  # each append's last position
        self._keys: dict[str, _Key] = {}
        self._committed = 0  # positions readers outside the lock see
        self._committed_appends = 0

    def encode_ahead(self, events: Sequence[NewEvent]) -> None:
        """Nothing: appends in memory encode under the lock."""

    def close(self) -> None:
        """Nothing to release: the records stay until the object goes."""

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        idempotency_key: str | None = None,
        receipt: bytes | None = None,
    ) -> AppendResult:
        """Append all events atomically; a reused idempotency key writes nothing."""
        with self.locked() as locked:
            return locked.append(events, idempotency_key=idempotency_key, receipt=receipt)

    @contextmanager
    def locked(self) -> Iterator[LockedInMemoryLog]:
        """Hold the write lock; commits on exit, and an error inside undoes its appends."""
        with self._lock:
            locked = LockedInMemoryLog(self)
            try:
                yield locked
            except BaseException:
                self._undo()
                raise
            self._keys.update(locked.keys)
            self._committed = len(self._rows)
            self._committed_appends = len(self._times)

    def read(
        self,
        *,
        start: int = 1,
        stop: int | None = None,
        tags: Sequence[str] = (),
        limit: int | None = None,
    ) -> Iterator[RecordedEvent]:
        """Events in position order from `start` to `stop` (inclusive), optionally by tag."""
        return self._read(start, stop, tags, limit, self._committed)

    def read_stream(self, stream_id: UUID, *, after_version: int = 0) -> list[RecordedEvent]:
        """Every event of one stream after `after_version`, oldest first."""
        return self._read_streams([stream_id], after_version, self._committed).get(stream_id, [])

    def read_streams(
        self, stream_ids: Sequence[UUID], *, after_version: int = 0
    ) -> dict[UUID, list[RecordedEvent]]:
        """Events of many streams at once, keyed by stream (those with any), oldest first."""
        return self._read_streams(stream_ids, after_version, self._committed)

    def find(self, key: str) -> RecordedEvent | None:
        """The event stored under a lookup key (`fact:<id>`, `message:<id>`), if any."""
        return self._find(key, self._committed)

    def repeated(self, idempotency_key: str) -> AppendResult | None:
        """The first append made with this idempotency key, if there was one."""
        return _repeated(self._keys.get(idempotency_key))

    def changed_since(self, position: int) -> tuple[list[UUID], list[str]]:
        """The streams appended to after `position`, and the tags appended (sorted)."""
        return self._changed_since(position, self._committed)

    def chains(self, positions: Sequence[int]) -> dict[int, bytes]:
        """The chain hash at each of these positions (those the log holds)."""
        return {p: self._rows[p - 1].chain for p in positions if 1 <= p <= self._committed}

    def last_position(self) -> int:
        """The highest position written so far (0 for an empty log)."""
        return self._committed

    def last_recorded_at(self) -> datetime | None:
        """The transaction time of the latest append (None for an empty log)."""
        appends = self._committed_appends
        return from_micros(self._times[appends - 1]) if appends else None

    def count(self) -> int:
        """How many events the log holds."""
        return self._committed

    def position_at(self, when: datetime) -> int:
        """The last position recorded at or before `when` (0 if none)."""
        appends = bisect_right(self._times, to_micros(when), 0, self._committed_appends)
        return self._ends[appends - 1] if appends else 0

    def raw_records(self, *, start: int = 1) -> Iterator[RawRecord]:
        """Every position with its record and chain hash, as stored."""
        for position in range(max(start, 1), self._committed + 1):
            row = self._rows[position - 1]
            yield RawRecord(
                position, row.stream.hex, row.version, row.tag, row.state, row.micros, row.chain
            )

    def keyed_appends(self) -> Iterator[KeyedAppend]:
        """Every idempotency key as held, in key order."""
        for key in sorted(self._keys):
            found = self._keys[key]
            first, last = (
                (found.positions[0], found.positions[-1]) if found.positions else (None, None)
            )
            yield KeyedAppend(key, first, last, found.micros)

    def _read(
        self, start: int, stop: int | None, tags: Sequence[str], limit: int | None, upto: int
    ) -> Iterator[RecordedEvent]:
        last = upto if stop is None else min(stop, upto)
        wanted = frozenset(tags)
        left = limit
        for position in range(max(start, 1), last + 1):
            if left is not None and left <= 0:
                return
            row = self._rows[position - 1]
            if wanted and row.tag not in wanted:
                continue
            event = recorded(position, row.stream, row.version, row.tag, row.state)
            if not (wanted and type(event.data) is Erased):  # blanked: not of its tag's kind
                yield event
            if left is not None:
                left -= 1

    def _read_streams(
        self, stream_ids: Sequence[UUID], after_version: int, upto: int
    ) -> dict[UUID, list[RecordedEvent]]:
        found: dict[UUID, list[RecordedEvent]] = {}
        for stream in dict.fromkeys(stream_ids):
            positions = [
                p
                for p in self._streams.get(stream, ())
                if p <= upto and self._rows[p - 1].version > after_version
            ]
            if positions:
                positions.sort(key=lambda p: self._rows[p - 1].version)
                found[stream] = [self._record(p) for p in positions]
        return found

    def _find(self, key: str, upto: int) -> RecordedEvent | None:
        lookup = parse_key(key)
        if lookup is None:
            return None
        low, _, version = location(lookup.located)
        for position in self._located.get((low.int >> 32, version), ()):
            record = self._record(position)
            if position <= upto and lookup.matches(record.data):
                return record
        return None

    def _changed_since(self, position: int, upto: int) -> tuple[list[UUID], list[str]]:
        rows = self._rows[max(position, 0) : upto]
        return list(dict.fromkeys(r.stream for r in rows)), sorted({r.tag for r in rows})

    def _record(self, position: int) -> RecordedEvent:
        row = self._rows[position - 1]
        return recorded(position, row.stream, row.version, row.tag, row.state)

    def _append(self, events: Sequence[NewEvent], recorded_at: datetime, micros: int) -> range:
        """Store one append's events (checked for conflicts first); the positions they took."""
        tags, states = encoded(events, recorded_at)
        self._check_free(events)
        chain = self._rows[-1].chain if self._rows else GENESIS
        streams = [e.stream_id.bytes for e in events]
        versions = [e.version for e in events]
        hashes = links(chain, zip(streams, versions, tags, states, strict=True))
        start = len(self._rows) + 1
        for e, tag, state, hashed in zip(events, tags, states, hashes, strict=True):
            position = len(self._rows) + 1
            self._rows.append(_Row(e.stream_id, e.version, tag, state, micros, hashed))
            self._at[(e.stream_id, e.version)] = position
            self._streams.setdefault(e.stream_id, []).append(position)
            self._located.setdefault((e.stream_id.int >> 32, e.version), []).append(position)
        if events:
            self._times.append(micros)
            self._ends.append(len(self._rows))
        return range(start, len(self._rows) + 1)

    def _check_free(self, events: Sequence[NewEvent]) -> None:
        """Raise ConcurrencyError when a (stream, version) is taken, before anything is written."""
        batch: set[tuple[UUID, int]] = set()
        for e in events:
            slot = (e.stream_id, e.version)
            if slot in self._at or slot in batch:
                raise ConcurrencyError(
                    f"version {e.version} of stream {e.stream_id} is already taken: another "
                    "writer appended to it first (read it again, decide again, append again)"
                )
            batch.add(slot)

    def _next_time(self) -> tuple[datetime, int]:
        """This append's transaction time: the clock's, but always after the last append's."""
        last = self._times[-1] if self._times else -1
        micros = max(to_micros(self._clock()), last + 1)
        return from_micros(micros), micros

    def _rows_held(self) -> int:
        """Positions the write lock's holder sees: its own appends too."""
        return len(self._rows)

    def _undo(self) -> None:
        """Drop everything appended since the last commit."""
        for row in self._rows[self._committed :]:
            del self._at[(row.stream, row.version)]
            self._streams[row.stream].pop()
            self._located[(row.stream.int >> 32, row.version)].pop()
        del self._rows[self._committed :]
        del self._times[self._committed_appends :]
        del self._ends[self._committed_appends :]


def _repeated(found: _Key | None) -> AppendResult | None:
    if found is None:
        return None
    return AppendResult(
        positions=list(found.positions),
        recorded_at=from_micros(found.micros),
        repeated=True,
        receipt=found.receipt,
    )


class LockedInMemoryLog:
    """The in-memory log under its write lock (see InMemoryLog.locked): reads see its own
    appends, which are committed when the lock is released."""

    def __init__(self, log: InMemoryLog) -> None:
        self._log = log
        self.appended = 0
        """Events appended under this lock."""
        self.keys: dict[str, _Key] = {}
        """Idempotency keys used under this lock (committed with its appends)."""

    def read_streams(
        self, stream_ids: Sequence[UUID], *, after_version: int = 0
    ) -> dict[UUID, list[RecordedEvent]]:
        """Events of many streams, read inside the lock."""
        return self._log._read_streams(stream_ids, after_version, self._log._rows_held())

    def read_stream(self, stream_id: UUID, *, after_version: int = 0) -> list[RecordedEvent]:
        """Events of one stream, read inside the lock."""
        return self.read_streams([stream_id], after_version=after_version).get(stream_id, [])

    def find(self, key: str) -> RecordedEvent | None:
        """The event stored under a lookup key, read inside the lock."""
        return self._log._find(key, self._log._rows_held())

    def repeated(self, idempotency_key: str) -> AppendResult | None:
        """The first append made with this idempotency key, read inside the lock."""
        found = self.keys.get(idempotency_key)
        return _repeated(found) if found is not None else self._log.repeated(idempotency_key)

    def last_position(self) -> int:
        """The highest position written so far, read inside the lock."""
        return self._log._rows_held()

    def changed_since(self, position: int) -> tuple[list[UUID], list[str]]:
        """The streams appended to after `position`, and the tags appended, inside the lock."""
        return self._log._changed_since(position, self._log._rows_held())

    def read_after(self, position: int) -> Iterator[RecordedEvent]:
        """The events appended after `position`, in order, read inside the lock."""
        return self._log._read(position + 1, None, (), None, self._log._rows_held())

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        idempotency_key: str | None = None,
        receipt: bytes | None = None,
    ) -> AppendResult:
        """Append inside the lock; committed when the lock is released."""
        if idempotency_key is not None:
            check_key(idempotency_key)
            first = self.repeated(idempotency_key)
            if first is not None:
                return first
        recorded_at, micros = self._log._next_time()
        positions = self._log._append(events, recorded_at, micros)
        if idempotency_key is not None:
            self.keys[idempotency_key] = _Key(positions, micros, receipt)
        self.appended += len(positions)
        return AppendResult(positions=list(positions), recorded_at=recorded_at)
