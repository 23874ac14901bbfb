"""The event log on PostgreSQL: the SQLite log's records, chain, time index and keys, with
writers in many processes.

It implements `events.ports.Log`. A locked section (every append is one) is a transaction
that first takes the events table's EXCLUSIVE lock, as eventsourcing's PostgreSQL recorder
does: writers queue for it, readers (plain SELECTs) never wait. The lock holder reads the
last position, time and chain hash, so positions are gapless, and positions, `recorded_at`
and the chain follow commit order. Readers would tolerate gaps all the same: every read is
by position range, never by counting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Final
from uuid import UUID

import psycopg
from blake3 import blake3
from psycopg import errors
from psycopg.pq import TransactionStatus

from apexmem.events import postgres_reads as reads
from apexmem.events.chainrows import Query
from apexmem.events.envelope import (
    AppendResult,
    KeyedAppend,
    NewEvent,
    RawRecord,
    RecordedEvent,
    check_key,
)
from apexmem.events.erasure import blank, redacted_receipt
from apexmem.events.errors import ApexmemError, ConcurrencyError
from apexmem.events.postgres import (
    DEFAULT_SCHEMA,
    Connections,
    Server,
    claim_schema,
    quoted_schema,
)
from apexmem.events.postgres_append import (
    Prepared,
    Tail,
    append_in,
    prepare,
    read_tail,
    tail_sql,
)
from apexmem.events.postgres_reads import LAYOUT, Tables
from apexmem.events.restore import Restored, RestoredKey
from apexmem.events.timeutil import from_micros, to_micros

__all__ = ["LockedPostgresLog", "PostgresLog"]

Clock = Callable[[], datetime]
_CONFLICT: Final = (
    "a stream changed while this append was decided: another writer appended to it first "
    "(read it again, decide again, append again)"
)


class PostgresLog:
    """The one ordered, hash-chained, append-only log of a memory, in a PostgreSQL schema."""

    def __init__(
        self,
        url: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        clock: Clock | None = None,
        create: bool = True,
    ) -> None:
        """Open the log in `schema` of the database at `url`, creating its tables if `create`.

        Raises ApexmemError, having written nothing, when the server cannot be reached or
        refuses the login, when the schema holds another application's tables or another
        layout version, or (without `create`) when it holds no log.
        """
        self.server = Server(url)
        self.schema = schema
        self._tables = Tables(quoted_schema(schema))
        self._clock: Clock = clock or (lambda: datetime.now(UTC))
        self._tail_sql = tail_sql(self._tables)
        self._changes = reads.Changes(self._tables)
        self._ahead = threading.local()  # per thread: the events encoded by encode_ahead
        # Autocommit connections: a read is one statement, a locked section its own BEGIN.
        # No JIT: every statement of the log is short, and a log written faster than
        # autovacuum analyzes it has no statistics, whose guesses made the server compile a
        # 500-stream read for 16 ms (to run it in 8).
        self._connections = Connections(self.server, options="-c jit=off")
        try:
            with self._connections.connection() as connection:
                claim_schema(connection, schema, "log", LAYOUT, Tables.CREATE, create=create)
        except psycopg.Error as e:
            self._connections.close()
            raise ApexmemError(f"cannot set up the log on {self.server}: {e}") from e
        except BaseException:
            self._connections.close()
            raise

    def close(self) -> None:
        """Close every connection; the log's tables stay."""
        self._connections.close()

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        idempotency_key: str | None = None,
        receipt: bytes | None = None,
    ) -> AppendResult:
        """Append all events atomically; a reused idempotency key writes nothing.

        Raises ConcurrencyError when a (stream, version) is already taken. The events are
        checked and encoded before the lock is taken, which then covers only the write.
        """
        if idempotency_key is not None:
            check_key(idempotency_key)
            first = self.repeated(idempotency_key)
            if first is not None:
                return first
        prepared = prepare(events, to_micros(self._clock()))
        with self.locked() as locked:
            return locked._append(events, idempotency_key, receipt, prepared)

    def encode_ahead(self, events: Sequence[NewEvent]) -> None:
        """Check and encode `events` now, before the write lock: the next append of these
        very events (the same objects) by this thread, under the lock, uses what was done
        here instead of doing it there (stamped again only if another append took a later
        time meanwhile). Events that fail the checks are left for the append to refuse."""
        try:
            prepared = prepare(events, to_micros(self._clock()))
        except ApexmemError:
            self._ahead.value = None
            return
        self._ahead.value = (list(events), prepared)

    def _encoded_ahead(self, events: Sequence[NewEvent]) -> Prepared | None:
        """What encode_ahead did for exactly these events in this thread, if it did (once)."""
        ahead = getattr(self._ahead, "value", None)
        if ahead is None:
            return None
        self._ahead.value = None
        encoded: list[NewEvent] = ahead[0]
        prepared: Prepared = ahead[1]
        if len(encoded) != len(events) or any(
            a is not b for a, b in zip(encoded, events, strict=True)
        ):
            return None
        return prepared

    @contextmanager
    def locked(self) -> Iterator[LockedPostgresLog]:
        """Hold the write lock: reads inside see the latest log, appends commit on exit.

        A conflict inside raises ConcurrencyError and rolls back what was appended under
        it; so does any other error.
        """
        self._changes.refresh(self._query)
        with self._connections.connection() as connection:
            try:
                # One round trip: the simple protocol runs the three statements, the last
                # reading the log's tail once the lock is held.
                cursor = connection.execute(
                    f"BEGIN; LOCK TABLE {self._tables.events} IN EXCLUSIVE MODE; {self._tail_sql}"
                )
                while cursor.description is None and cursor.nextset():
                    pass
                tail = read_tail(cursor.fetchone())
            except psycopg.Error as e:
                _rollback(connection)
                raise self._failed(e, "take the log's write lock") from e
            locked = LockedPostgresLog(self, connection, tail)
            try:
                yield locked
            except BaseException:
                _rollback(connection)
                raise
            try:
                writes = locked._writes
                if writes:  # the index and key rows with the COMMIT: one round trip
                    with connection.pipeline():
                        for sql, params in writes:
                            connection.execute(sql, params)
                        connection.execute("COMMIT")
                else:
                    connection.execute("COMMIT")
            except psycopg.Error as e:
                if connection.broken or isinstance(e, psycopg.OperationalError):
                    # The commit may have landed before the connection went (a pipeline can
                    # fail on a lost server before the connection knows it is broken): an
                    # append retried with its idempotency key lands once either way.
                    _rollback(connection)
                    raise self._failed(e, "commit an append (it may or may not have landed)") from e
                if connection.info.transaction_status != TransactionStatus.IDLE:
                    _rollback(connection)
                raise self._failed(e, "commit an append") from e

    def read(
        self,
        *,
        start: int = 1,
        stop: int | None = None,
        tags: Sequence[str] = (),
        limit: int | None = None,
    ) -> Iterator[RecordedEvent]:
        """Events in position order from `start` to `stop` (inclusive), optionally by tag."""
        return reads.read(self._query, self._tables, start=start, stop=stop, tags=tags, limit=limit)

    def read_stream(self, stream_id: UUID, *, after_version: int = 0) -> list[RecordedEvent]:
        """Every event of one stream after `after_version`, oldest first."""
        return self.read_streams([stream_id], after_version=after_version).get(stream_id, [])

    def read_streams(
        self, stream_ids: Sequence[UUID], *, after_version: int = 0
    ) -> dict[UUID, list[RecordedEvent]]:
        """Events of many streams at once, keyed by stream, each oldest first."""
        return reads.read_streams(self._query, self._tables, stream_ids, after_version)

    def find(self, key: str) -> RecordedEvent | None:
        """The event stored under a lookup key (`fact:<id>`, `message:<id>`), if any."""
        return reads.find(self._query, self._tables, key)

    def repeated(self, idempotency_key: str) -> AppendResult | None:
        """The first append made with this idempotency key, if there was one."""
        return reads.repeated(self._query, self._tables, idempotency_key)

    def changed_since(self, position: int) -> tuple[list[UUID], list[str]]:
        """The streams appended to after `position`, and the tags appended (payloads unread)."""
        return self._changes.since(self._query, position)

    def chains(self, positions: Sequence[int]) -> dict[int, bytes]:
        """The chain hash stored at each of these positions."""
        return reads.chains(self._query, self._tables, positions)

    def last_position(self) -> int:
        """The highest position written so far (0 for an empty log)."""
        return _last_position(self._query, self._tables)

    def last_recorded_at(self) -> datetime | None:
        """The transaction time of the latest append (None for an empty log)."""
        [(micros,)] = self._query(f"SELECT MAX(recorded_at) FROM {self._tables.index}", ())
        return None if micros is None else from_micros(micros)

    def count(self) -> int:
        """How many events the log holds."""
        return int(self._query(f"SELECT COUNT(*) FROM {self._tables.events}", ())[0][0])

    def position_at(self, when: datetime) -> int:
        """The last position recorded at or before `when` (0 if none): the log as known then."""
        # Times increase with positions (each append's is after the last's), so the latest
        # time at or before `when` is the last position then: one step down its index.
        rows = self._query(
            f"SELECT position FROM {self._tables.index} WHERE recorded_at <= %s "
            "ORDER BY recorded_at DESC, position DESC LIMIT 1",
            (to_micros(when),),
        )
        return int(rows[0][0]) if rows else 0

    def raw_records(self, *, start: int = 1) -> Iterator[RawRecord]:
        """Every position that has a record or a chain hash, with both as stored."""
        return reads.raw_records(self._query, self._tables, start)

    def restore(self, appends: Iterable[Restored], keys: Iterable[RestoredKey]) -> int:
        """Write another log's appends and idempotency keys as stored into this empty log,
        in one transaction (nothing on an error); returns the events written."""
        tables, written = self._tables, 0
        with self.locked() as locked:
            connection = locked._connection
            if locked.last_position() or locked._query(f"SELECT 1 FROM {tables.keys} LIMIT 1"):
                raise ApexmemError(
                    f"schema {self.schema} on {self.server} is not empty; "
                    "a log is restored into a new one"
                )
            for done in appends:
                with connection.cursor().copy(
                    f"COPY {tables.events} (position, stream, version, tag, state) FROM STDIN "
                    "(FORMAT BINARY)"
                ) as copy:
                    copy.set_types(["int8", "uuid", "int8", "text", "bytea"])
                    rows = zip(
                        done.positions, done.streams, done.versions, done.tags, done.states,
                        strict=True,
                    )  # fmt: skip
                    for row in rows:
                        copy.write_row(row)
                connection.execute(
                    f"INSERT INTO {tables.index} VALUES (%s, %s, %s)",
                    (done.positions[-1], done.micros, done.chain),
                )
                written += len(done.positions)
            for key in keys:
                kept = key.kept
                connection.execute(
                    f"INSERT INTO {tables.keys} VALUES (%s, %s, %s, %s, %s)",
                    (kept.key, kept.first_position, kept.last_position, kept.recorded_at,
                     key.receipt),
                )  # fmt: skip
        return written

    def bytes_used(self) -> int:
        """The bytes the log's tables and their indexes take on the server."""
        tables = self._tables
        [(size,)] = self._query(
            "SELECT pg_total_relation_size(%s::regclass) + pg_total_relation_size(%s::regclass) "
            "+ pg_total_relation_size(%s::regclass)",
            (tables.events, tables.index, tables.keys),
        )
        return int(size)

    def scrub(self) -> None:
        """Rewrite the log's tables (VACUUM FULL) after an erasure committed, so the row
        versions that held the erased bytes are gone from their files (PostgreSQL's own WAL
        and any archive or replica of it are the server's, outside apexmem's reach)."""
        tables = self._tables
        with self._connections.connection() as connection:
            try:
                connection.execute(f"VACUUM FULL {tables.events}, {tables.keys}")
            except psycopg.Error as e:
                raise self._failed(e, "rewrite the log's tables after an erasure") from e

    def keyed_appends(self) -> Iterator[KeyedAppend]:
        """Every idempotency key as stored, in key order."""
        return reads.keyed_appends(self._query, self._tables)

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        # Autocommit: one statement is its own read transaction, seeing what was committed.
        with self._connections.connection() as connection:
            try:
                return connection.execute(sql, params, binary=True).fetchall()
            except psycopg.Error as e:
                raise self._failed(e, "read the log") from e

    def _failed(self, error: psycopg.Error, doing: str) -> ApexmemError:
        """The one error a caller sees when PostgreSQL fails us (the cause kept)."""
        if isinstance(error, errors.LockNotAvailable):
            return ApexmemError(f"the event log on {self.server} is busy: {error}")
        return ApexmemError(f"could not {doing} on {self.server}: {error}")


class LockedPostgresLog:
    """The log under its write lock (see PostgresLog.locked)."""

    def __init__(self, log: PostgresLog, connection: psycopg.Connection[Any], tail: Tail) -> None:
        self._log = log
        self._tables = log._tables
        self._connection = connection
        self._tail = tail
        self._writes: list[tuple[str, tuple[Any, ...]]] = []
        """Index and key rows of the appends so far, sent before a read or with the COMMIT."""
        self.appended = 0
        """Events appended under this lock (committed when it is released)."""

    def read_streams(
        self, stream_ids: Sequence[UUID], *, after_version: int = 0
    ) -> dict[UUID, list[RecordedEvent]]:
        """Events of many streams, read inside the lock."""
        return reads.read_streams(self._query, self._tables, stream_ids, after_version)

    def read_stream(self, stream_id: UUID, *, after_version: int = 0) -> list[RecordedEvent]:
        """Events of one stream, read inside the lock."""
        return self.read_streams([stream_id], after_version=after_version).get(stream_id, [])

    def find(self, key: str) -> RecordedEvent | None:
        """The event stored under a lookup key, read inside the lock."""
        return reads.find(self._query, self._tables, key)

    def repeated(self, idempotency_key: str) -> AppendResult | None:
        """The first append made with this idempotency key, read inside the lock."""
        return reads.repeated(self._query, self._tables, idempotency_key)

    def last_position(self) -> int:
        """The highest position written so far, inside the lock (0 for an empty log): read
        when the lock was taken, counted on by the appends since."""
        return self._tail.last

    def changed_since(self, position: int) -> tuple[list[UUID], list[str]]:
        """The streams appended to after `position`, and the tags appended, inside the lock
        (rows held from before are committed ones: a section that appended reads them all)."""
        if self.appended or self._writes:
            return reads.changed_since(self._query, self._tables, position)
        return self._log._changes.since(self._query, position)

    def read_after(self, position: int) -> Iterator[RecordedEvent]:
        """The events appended after `position`, in order, read inside the lock."""
        return reads.read(
            self._query, self._tables, start=position + 1, stop=None, tags=(), limit=None
        )

    def blank(self, positions: Sequence[int]) -> dict[int, tuple[bytes, bytes]]:
        """Blank the records at these positions in place, inside the lock; returns, for
        each, the chain hash stored there and the blake3 hash of the blanked bytes (as
        `LockedEventLog.blank` does on SQLite; `PostgresLog.scrub` then rewrites the tables
        so the old row versions are gone from their files)."""
        wanted = sorted(set(positions))
        if not wanted:
            return {}
        tables = self._tables
        self._flush()
        stored = reads.chains(self._query, tables, wanted)
        rows = self._query(
            f"SELECT position, state FROM {tables.events} WHERE position = ANY(%s)", (wanted,)
        )
        blanked = [(position, blank(bytes(state))) for position, state in rows]
        try:
            with self._connection.cursor() as cursor:
                cursor.executemany(
                    f"UPDATE {tables.events} SET state = %s WHERE position = %s",
                    [(state, position) for position, state in blanked],
                )
                receipts = self._query(
                    f"SELECT key, receipt FROM {tables.keys} WHERE receipt IS NOT NULL AND "
                    "EXISTS (SELECT 1 FROM unnest(%s::bigint[]) AS p "
                    "WHERE p BETWEEN first_position AND last_position)",
                    (wanted,),
                )
                cursor.executemany(
                    f"UPDATE {tables.keys} SET receipt = %s WHERE key = %s",
                    [(redacted_receipt(bytes(r)), k) for k, r in receipts],
                )
        except psycopg.Error as e:
            raise self._log._failed(e, "blank erased records") from e
        return {p: (stored[p], blake3(state).digest()) for p, state in blanked}

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        idempotency_key: str | None = None,
        receipt: bytes | None = None,
    ) -> AppendResult:
        """Append inside the lock; committed when the lock is released.

        Raises ConcurrencyError when a (stream, version) is already taken; the lock's
        transaction is then spoilt, so the section ends with it.
        """
        return self._append(events, idempotency_key, receipt, None)

    def _append(
        self,
        events: Sequence[NewEvent],
        key: str | None,
        receipt: bytes | None,
        prepared: Prepared | None,
    ) -> AppendResult:
        if key is not None:
            check_key(key)
            first = self.repeated(key)
            if first is not None:
                return first
        if prepared is None:
            prepared = self._log._encoded_ahead(events)
        try:
            appended = append_in(
                self._connection,
                self._tables,
                events,
                key,
                receipt,
                tail=self._tail,
                clock=self._log._clock,
                prepared=prepared,
            )
        except errors.UniqueViolation as e:
            raise ConcurrencyError(_CONFLICT) from e
        except psycopg.Error as e:
            raise self._log._failed(e, "append") from e
        self._tail = appended.tail
        self._writes += appended.writes
        self.appended += len(appended.result.positions)
        return appended.result

    def _flush(self) -> None:
        """Send the index and key rows held so far, so what follows reads them."""
        writes, self._writes = self._writes, []
        try:
            for sql, params in writes:
                self._connection.execute(sql, params)
        except psycopg.Error as e:
            raise self._log._failed(e, "append") from e

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        if self._writes:
            self._flush()
        try:
            return self._connection.execute(sql, params, binary=True).fetchall()
        except psycopg.Error as e:
            raise self._log._failed(e, "read the log") from e


def _rollback(connection: psycopg.Connection[Any]) -> None:
    """End the locked section's transaction, if the connection still can; one that cannot
    (lost, or left in a broken pipeline) is closed, so the pool never hands it out again."""
    if connection.broken:
        return
    try:
        connection.execute("ROLLBACK")
    except psycopg.Error:
        connection.close()


def _last_position(query: Query, tables: Tables) -> int:
    return int(query(f"SELECT MAX(position) FROM {tables.events}", ())[0][0] or 0)
