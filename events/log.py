"""The event log on SQLite: atomic batches, global positions, time index, chain, keys.

It implements `events.ports.Log`; the types it takes and gives are in `events.envelope`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from apexmem.events import logreads, sqlite_erasure
from apexmem.events.chain import GENESIS, links
from apexmem.events.chainrows import chain_links, chains, copy_rows, insert_row, last_row
from apexmem.events.checkpoint import Checkpointer
from apexmem.events.diskfull import ReadOnlyOnFullDisk, full_disk, is_full
from apexmem.events.envelope import (
    AppendResult,
    KeyedAppend,
    NewEvent,
    RawRecord,
    RecordedEvent,
    check_key,
    encoded,
)
from apexmem.events.erasure import Vouch, vouches_after
from apexmem.events.errors import ApexmemError, ConcurrencyError, IntegrityViolation
from apexmem.events.logreads import READ_CHUNK, cursor_query, raw_record
from apexmem.events.restore import Restored, RestoredKey
from apexmem.events.sqlite import (
    EVENTS_TABLE,
    Datastore,
    Recorder,
    Row,
    Synchronous,
    blobs,
    is_damaged,
)
from apexmem.events.storedids import BINARY, IdFormat, StoredIds
from apexmem.events.timeutil import from_micros, to_micros

__all__ = ["Clock", "EventLog", "LockedEventLog"]

Clock = Callable[[], datetime]


class EventLog:
    """The one ordered, hash-chained, append-only log of a memory (a SQLite file)."""

    def __init__(
        self,
        path: Path | str,
        *,
        synchronous: Synchronous = "NORMAL",
        clock: Clock | None = None,
        ids: IdFormat = BINARY,
    ) -> None:
        """Open (or create) the log at `path`.

        `ids` is how a new file stores stream ids and lookup keys (see
        `apexmem.events.storedids`); an existing file keeps the format it was made with.
        """
        self.path = Path(path)
        self._clock: Clock = clock or (lambda: datetime.now(UTC))
        self._datastore = Datastore(str(self.path), synchronous=synchronous)
        self._recorder = Recorder(self._datastore, ids=ids)
        try:
            self._recorder.create_table()
        except Exception as e:
            self._datastore.close()
            if is_full(e):
                raise full_disk(self.path, e) from e
            if is_damaged(e):
                raise IntegrityViolation(
                    f"{self.path} is damaged and cannot be read ({e}); restore it from a copy"
                ) from e
            raise
        self.ids: StoredIds = self._recorder.ids
        """How this file stores stream ids and lookup keys."""
        self._checkpointer = Checkpointer(str(self.path), synchronous=synchronous)

    def encode_ahead(self, events: Sequence[NewEvent]) -> None:
        """Nothing: one process writes a SQLite file, so encoding under its lock waits on no
        other writer."""

    def close(self) -> None:
        """Close every connection; the log file stays."""
        self._checkpointer.close()
        self._datastore.close()

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        idempotency_key: str | None = None,
        receipt: bytes | None = None,
    ) -> AppendResult:
        """Append all events atomically; a reused idempotency key writes nothing.

        A reused key returns the first append's positions and `receipt`. Raises
        ConcurrencyError when a (stream, version) is already taken.
        """
        with self.locked() as locked:
            return locked.append(events, idempotency_key=idempotency_key, receipt=receipt)

    def _append_in(
        self, cursor: Any, events: Sequence[NewEvent], key: str | None, receipt: bytes | None
    ) -> AppendResult:
        if key is not None:
            check_key(key)
            first = logreads.repeated(cursor_query(cursor), key)
            if first is not None:
                return first
        last = last_row(cursor)
        last_micros, chain = last if last is not None else (-1, GENESIS)
        # Every append gets its own transaction time, even when the clock stalls or steps
        # back: "known at S" then tells any two appends apart.
        micros = max(to_micros(self._clock()), last_micros + 1)
        recorded_at = from_micros(micros)
        rows, hashes = _records(self.ids, events, recorded_at, chain)
        positions = self._recorder.insert_rows(cursor, rows)
        if positions:
            insert_row(cursor, positions[-1], micros, hashes)
        if key is not None:
            cursor.execute(
                "INSERT INTO idempotency VALUES (?,?,?,?,?)",
                (
                    key,
                    positions[0] if positions else None,
                    positions[-1] if positions else None,
                    micros,
                    receipt,
                ),
            )
        return AppendResult(positions=positions, recorded_at=recorded_at)

    @contextmanager
    def locked(self) -> Iterator[LockedEventLog]:
        """Hold the write lock: reads see the latest log and one append cannot conflict.

        The write path uses this to retry after a ConcurrencyError, so a writer racing
        others on a hot stream always makes progress. Commits on exit.
        """
        with self._datastore.get_connection(commit=True) as connection:
            cursor = connection.cursor()
            self._begin(cursor)
            locked = LockedEventLog(self, cursor)
            try:
                yield locked
                connection.commit()
            except sqlite3.IntegrityError as e:
                connection.rollback()
                raise ConcurrencyError(  # SQLite's text (the constraint) stays in the cause
                    "a stream changed while this append was decided: another writer appended "
                    "to it first (read it again, decide again, append again)"
                ) from e
            except sqlite3.OperationalError as e:
                connection.rollback()
                if is_full(e):
                    raise full_disk(self.path, e) from e
                raise
            except BaseException:
                connection.rollback()
                raise
        self._checkpointer.committed(locked.appended)  # after the commit, outside its errors

    def _begin(self, cursor: Any) -> None:
        """Take the write lock (BEGIN IMMEDIATE), or say why it cannot be had."""
        if isinstance(cursor.sqlite_cursor.connection, ReadOnlyOnFullDisk):
            raise full_disk(self.path)
        try:
            cursor.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            if is_full(e):
                raise full_disk(self.path, e) from e
            raise ApexmemError(f"the event log is busy or unwritable: {e}") from e

    def read(
        self,
        *,
        start: int = 1,
        stop: int | None = None,
        tags: Sequence[str] = (),
        limit: int | None = None,
    ) -> Iterator[RecordedEvent]:
        """Events in position order from `start` to `stop` (inclusive), optionally by tag.

        `limit` caps how many are read (and decoded) in all.
        """
        return logreads.read(self._query, start=start, stop=stop, tags=tags, limit=limit)

    def read_stream(self, stream_id: UUID, *, after_version: int = 0) -> list[RecordedEvent]:
        """Every event of one stream after `after_version`, oldest first."""
        return self.read_streams([stream_id], after_version=after_version).get(stream_id, [])

    def read_streams(
        self, stream_ids: Sequence[UUID], *, after_version: int = 0
    ) -> dict[UUID, list[RecordedEvent]]:
        """Events of many streams at once, keyed by stream, each oldest first."""
        return logreads.read_streams(self._query, self.ids, stream_ids, after_version)

    def find(self, key: str) -> RecordedEvent | None:
        """The event stored under a lookup key (`fact:<id>`, `message:<id>`), if any."""
        return logreads.find(self._query, self.ids, key)

    def repeated(self, idempotency_key: str) -> AppendResult | None:
        """The first append made with this idempotency key, if there was one."""
        return logreads.repeated(self._query, idempotency_key)

    def changed_since(self, position: int) -> tuple[list[UUID], list[str]]:
        """The streams appended to after `position`, and the tags appended (payloads unread)."""
        return logreads.changed_since(self._query, position)

    def chains(self, positions: Sequence[int]) -> dict[int, bytes]:
        """The chain hash stored at each of these positions."""
        return chains(self._query, positions)

    def last_position(self) -> int:
        """The highest position written so far (0 for an empty log)."""
        return int(self._recorder.max_notification_id() or 0)

    def last_recorded_at(self) -> datetime | None:
        """The transaction time of the latest append (None for an empty log)."""
        rows = self._query("SELECT MAX(recorded_at) FROM log_index")
        return None if rows[0][0] is None else from_micros(rows[0][0])

    def count(self) -> int:
        """How many events the log holds (positions may have gaps)."""
        return int(self._query(f"SELECT COUNT(*) FROM {EVENTS_TABLE}")[0][0])

    def position_at(self, when: datetime) -> int:
        """The last position recorded at or before `when` (0 if none): the log as known then."""
        rows = self._query(
            "SELECT MAX(position) FROM log_index WHERE recorded_at <= ?", (to_micros(when),)
        )
        return int(rows[0][0] or 0)

    def copy_to(self, path: Path | str, *, until: int) -> int:
        """Copy the log up to position `until` into a new log file; returns the events copied.

        Rows are copied as stored (payloads, chain hashes, lookup and idempotency keys), so
        the copy verifies and answers history exactly as this log did at `until`.
        """
        target = Path(path)
        if target.exists():
            raise ApexmemError(f"{target} already exists; a log copy never overwrites")
        EventLog(target, ids=self.ids.name).close()  # the copy keeps this file's format
        connection = sqlite3.connect(target, isolation_level=None)
        try:
            connection.execute("ATTACH DATABASE ? AS source", (str(self.path),))
            connection.execute("BEGIN IMMEDIATE")
            copied = connection.execute(
                f"INSERT INTO {EVENTS_TABLE} SELECT * FROM source.{EVENTS_TABLE} WHERE rowid <= ?",
                (until,),
            ).rowcount
            copy_rows(connection.execute, until)
            connection.execute(
                "INSERT INTO event_keys SELECT * FROM source.event_keys WHERE position <= ?",
                (until,),
            )
            connection.execute(
                "INSERT INTO idempotency SELECT * FROM source.idempotency "
                "WHERE COALESCE(last_position, 0) <= ? AND recorded_at <= "
                "(SELECT COALESCE(MAX(recorded_at), 0) FROM source.log_index WHERE position <= ?)",
                (until, until),
            )
            sqlite_erasure.copy_vouches(connection, vouches_after(self, until))
            connection.execute("COMMIT")
        except sqlite3.OperationalError as e:
            if is_full(e):
                raise full_disk(target, e) from e
            raise
        finally:
            connection.close()
        return int(copied)

    def keep_vouches(self, vouches: Sequence[Vouch]) -> None:
        """Keep, in this copy of a log cut before erasures, what those erasures committed
        to (see `vouched_elsewhere`; `copy_to` and `migrate` with `until` call it)."""
        if vouches:
            with self.locked() as locked:
                sqlite_erasure.copy_vouches(locked._cursor, vouches)

    def vouched_elsewhere(self) -> dict[int, tuple[bytes, bytes, int, bytes]]:
        """In a copy cut before an erasure (`copy_to`): for each position it blanked, the
        chain hash and blanked-bytes hash that the erasure committed to, the erasure's
        position in the log copied from and its chain hash there. Empty in any other log."""
        return sqlite_erasure.vouched_elsewhere(self._query)

    def scrub(self) -> None:
        """Leave no trace of blanked bytes in the file or its WAL (after an erasure
        committed). Raises ApexmemError when another connection's reader keeps the WAL
        from being emptied."""
        with self._datastore.get_connection(commit=False) as connection:
            sqlite_erasure.scrub(connection.cursor(), self.path)

    def raw_records(self, *, start: int = 1) -> Iterator[RawRecord]:
        """Every position that has a record or a chain hash, with both as stored.

        Reads up to the last position written when it starts: positions up to there never
        change, so records and chain rows read by separate statements agree even while
        other writers append.
        """
        [(stop,)] = self._query(
            f"SELECT MAX(COALESCE((SELECT MAX(rowid) FROM {EVENTS_TABLE}), 0), "
            "COALESCE((SELECT MAX(position) FROM log_index), 0))"
        )
        records = self._stored_rows(start, stop)
        links = chain_links(self._query, start, stop)
        record, link = next(records, None), next(links, None)
        while record is not None or link is not None:
            at_record = record is not None and (link is None or record[0] <= link.position)
            at_link = link is not None and (record is None or link.position <= record[0])
            yield raw_record(record if at_record else None, link if at_link else None)
            if at_record:
                record = next(records, None)
            if at_link:
                link = next(links, None)

    def restore(self, appends: Iterable[Restored], keys: Iterable[RestoredKey]) -> int:
        """Write another log's appends and idempotency keys as stored into this empty log,
        in one transaction (nothing on an error); returns the events written."""
        written = 0
        with self.locked() as locked:
            cursor = locked._cursor
            if locked.last_position() or self._query("SELECT 1 FROM idempotency LIMIT 1"):
                raise ApexmemError(f"{self.path} is not empty; a log is restored into a new one")
            for done in appends:
                streams = self.ids.streams(done.streams)
                cursor.executemany(
                    f"INSERT INTO {EVENTS_TABLE} "
                    "(rowid, originator_id, originator_version, topic, state) VALUES (?,?,?,?,?)",
                    zip(
                        done.positions,
                        blobs(streams) if self.ids.binary else streams,
                        done.versions,
                        done.tags,
                        blobs(done.states),
                        strict=True,
                    ),
                )
                insert_row(cursor, done.positions[-1], done.micros, [done.chain])
                written += len(done.positions)
            for key in keys:
                kept = key.kept
                cursor.execute(
                    "INSERT INTO idempotency VALUES (?,?,?,?,?)",
                    (kept.key, kept.first_position, kept.last_position, kept.recorded_at,
                     key.receipt),
                )  # fmt: skip
        return written

    def keyed_appends(self) -> Iterator[KeyedAppend]:
        """Every idempotency key as stored, in key order (read in chunks)."""
        after: str | None = None
        while rows := self._query(
            "SELECT key, first_position, last_position, recorded_at FROM idempotency "
            "WHERE ? IS NULL OR key > ? ORDER BY key LIMIT ?",
            (after, after, READ_CHUNK),
        ):
            for key, first, last, micros in rows:
                yield KeyedAppend(str(key), first, last, int(micros))
            after = str(rows[-1][0])

    def _stored_rows(self, start: int, stop: int) -> Iterator[tuple[Any, ...]]:
        """The events table's rows from `start` to `stop`, as stored, in position order."""
        sql = (
            f"SELECT rowid, originator_id, originator_version, topic, state FROM {EVENTS_TABLE} "
            "WHERE rowid >= ? AND rowid <= ? ORDER BY rowid LIMIT ?"
        )
        position = start
        while rows := self._query(sql, (position, stop, READ_CHUNK)):
            yield from rows
            position = rows[-1][0] + 1

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        # One statement is its own read transaction in autocommit mode: no BEGIN needed.
        with self._datastore.get_connection(commit=False) as connection:
            cursor = connection.cursor()
            cursor.execute(sql, params)
            return list(cursor.fetchall())


class LockedEventLog:
    """The log under its write lock (see EventLog.locked); one append per lock."""

    def __init__(self, log: EventLog, cursor: Any) -> None:
        self._log = log
        self.ids = log.ids
        self._cursor = cursor
        self._query = cursor_query(cursor)
        self.appended = 0
        """Events appended under this lock (committed when it is released)."""

    def read_streams(
        self, stream_ids: Sequence[UUID], *, after_version: int = 0
    ) -> dict[UUID, list[RecordedEvent]]:
        """Events of many streams, read inside the lock."""
        return logreads.read_streams(self._query, self.ids, stream_ids, after_version)

    def read_stream(self, stream_id: UUID, *, after_version: int = 0) -> list[RecordedEvent]:
        """Events of one stream, read inside the lock."""
        return self.read_streams([stream_id], after_version=after_version).get(stream_id, [])

    def find(self, key: str) -> RecordedEvent | None:
        """The event stored under a lookup key, read inside the lock."""
        return logreads.find(self._query, self.ids, key)

    def repeated(self, idempotency_key: str) -> AppendResult | None:
        """The first append made with this idempotency key, read inside the lock."""
        return logreads.repeated(self._query, idempotency_key)

    def last_position(self) -> int:
        """The highest position written so far, read inside the lock (0 for an empty log)."""
        return int(self._query(f"SELECT MAX(rowid) FROM {EVENTS_TABLE}", ())[0][0] or 0)

    def changed_since(self, position: int) -> tuple[list[UUID], list[str]]:
        """The streams appended to after `position`, and the tags appended, inside the lock."""
        return logreads.changed_since(self._query, position)

    def read_after(self, position: int) -> Iterator[RecordedEvent]:
        """The events appended after `position`, in order, read inside the lock."""
        return logreads.read(self._query, start=position + 1, stop=None, tags=(), limit=None)

    def blank(self, positions: Sequence[int]) -> dict[int, tuple[bytes, bytes]]:
        """Blank the records at these positions in place (`events.erasure.blank`), inside
        the lock; for each, the chain hash stored there and the blake3 hash of the blanked
        bytes. The one in-place change the log allows, made only by an erasure, which
        appends its `records-erased.v1` in the same transaction."""
        return sqlite_erasure.blank_rows(self._cursor, self._query, positions)

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        idempotency_key: str | None = None,
        receipt: bytes | None = None,
    ) -> AppendResult:
        """Append inside the lock; committed when the lock is released."""
        appended = self._log._append_in(self._cursor, events, idempotency_key, receipt)
        if not appended.repeated:
            self.appended += len(appended.positions)
        return appended


def _records(
    ids: StoredIds, events: Sequence[NewEvent], recorded_at: datetime, chain: bytes
) -> tuple[list[Row], list[bytes]]:
    """The rows of one append and the chain hash of each.

    The rows are what TaggedMapper.to_stored_event makes, without its objects. Raises
    ValidationError, before anything is written, for an envelope `encoded` refuses.
    """
    streams = ids.streams([e.stream_id for e in events])
    versions = [e.version for e in events]
    tags, states = encoded(events, recorded_at)
    # The chain hashes each stream id's 16 bytes, which a binary log stores as they are.
    raw = streams if ids.binary else [e.stream_id.int.to_bytes(16) for e in events]
    hashes = links(chain, zip(raw, versions, tags, states, strict=True))
    bound = blobs(streams) if ids.binary else streams
    return list(zip(bound, versions, tags, blobs(states), strict=True)), hashes
