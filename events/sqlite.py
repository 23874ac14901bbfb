"""eventsourcing's SQLite recorder, plus the side tables the log writes in the same transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final, Literal

from eventsourcing.persistence import InterfaceError, StoredEvent
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteDatastore,
)

from apexmem.events import diskfull
from apexmem.events.errors import ApexmemError
from apexmem.events.storedids import BINARY, TEXT, IdFormat, StoredIds, parse_stream

__all__ = [
    "CONNECTION_PRAGMAS",
    "EVENTS_TABLE",
    "Datastore",
    "Recorder",
    "Row",
    "Synchronous",
    "blobs",
    "is_damaged",
]

Synchronous = Literal["NORMAL", "FULL"]
Row = tuple[Any, int, str, bytes | bytearray]
"""One stored record as inserted: stream id (as StoredIds stores it), version, topic, state."""
EVENTS_TABLE: Final = "stored_events"
CONNECTION_PRAGMAS: Final = (
    "PRAGMA cache_size=-65536",
    # The checkpoint thread (events.checkpoint) copies the WAL back every few thousand
    # events; should it fall behind, a commit checkpoints itself at ~40 MB of WAL rather
    # than at SQLite's default 4 MB (fewer, larger copies).
    "PRAGMA wal_autocheckpoint=10000",
)
"""Set on every connection of the log, after `synchronous` (bench/append.py uses them too)."""


def blobs(values: Iterable[bytes]) -> Iterator[bytearray]:
    """Values to bind as BLOB parameters, in the form sqlite3 binds fastest.

    Python's sqlite3 binds a bytearray as it is, but passes every bytes parameter through
    its adapter protocol first: two attribute lookups that fail, each raising and
    formatting an AttributeError. That took ~0.7 µs per parameter, and an event's row
    carries two, its stream id and its payload (with the chain links, then one row per
    event, about 5% of a batched append's instructions); the copy costs ~0.1 µs.
    """
    return map(bytearray, values)


def is_damaged(error: BaseException) -> bool:
    """Whether `error` (or what it wraps) is SQLite finding a file damaged or not a database
    at all, rather than busy, locked or full."""
    while error is not None:
        if isinstance(error, sqlite3.DatabaseError) and getattr(
            error, "sqlite_errorcode", None
        ) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            return True
        error = getattr(error, "orig", None) or error.__cause__  # type: ignore[assignment]
    return False


_STATEMENT_CACHE: Final = 64
"""Compiled statements kept per connection (sqlite3's default is 128)."""
_SIDE_TABLES: Final = (
    # Time index and hash chain: one row per append, at its last position, holding its
    # events' chain hashes (events.chainrows); logs written before hold one per position.
    "CREATE TABLE IF NOT EXISTS log_index ("
    "position INTEGER PRIMARY KEY, recorded_at INTEGER NOT NULL, chain BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS log_index_recorded_at ON log_index (recorded_at)",
    # Idempotency keys: a repeated key returns the first append's positions and receipt.
    "CREATE TABLE IF NOT EXISTS idempotency ("
    "key TEXT PRIMARY KEY, first_position INTEGER, last_position INTEGER, "
    "recorded_at INTEGER NOT NULL, receipt BLOB)",
    # Lookup keys: fact and message ids to the position of the event that created them, as
    # logs written before located ids (events.located) stored them. Nothing writes here any
    # more: a located id names its event's stream and version. Kept so those logs' ids are
    # still found, and so a copy (copy_to) of any log has the same tables.
    # The key's type is the stream id's: BLOB in a new log, TEXT in logs made before.
    "CREATE TABLE IF NOT EXISTS event_keys ("
    "key {ids} PRIMARY KEY, position INTEGER NOT NULL) WITHOUT ROWID",
)


class _Pool(SQLiteConnectionPool):
    def __init__(self, *, db_name: str, synchronous: Synchronous, lock_timeout: int) -> None:
        self.synchronous = synchronous
        super().__init__(db_name=db_name, lock_timeout=lock_timeout, pool_size=4)

    def _create_connection(self) -> SQLiteConnection:
        # eventsourcing's own version passes `cached_statements=True`, which sqlite3 reads as
        # a cache of one statement: the write path's few statements took turns evicting each
        # other and were compiled again every time (a third of a single-fact append).
        try:
            raw = diskfull.connect(
                self.db_name,
                uri=True,
                check_same_thread=False,
                isolation_level=None,  # autocommit: transactions are begun explicitly
                cached_statements=_STATEMENT_CACHE,
                timeout=self.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT,
            )
        except (sqlite3.Error, TypeError) as e:
            raise InterfaceError(e) from e
        if isinstance(raw, diskfull.ReadOnlyOnFullDisk):
            pass  # immutable: already in WAL mode, and it may not write
        elif not self.is_sqlite_memory_mode and not self.is_journal_mode_wal:
            if raw.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                raw.execute("PRAGMA journal_mode=WAL")
                self.journal_mode_was_changed_to_wal = True
            self.is_journal_mode_wal = True
        raw.row_factory = sqlite3.Row
        full = isinstance(raw, diskfull.ReadOnlyOnFullDisk)
        connection = SQLiteConnection(
            sqlite_conn=raw, max_age=diskfull.RECHECK_SECS if full else self.max_age
        )
        cursor = connection.cursor()
        # NORMAL in WAL mode loses no committed transaction on a process crash, only on power
        # loss; FULL syncs every commit (the `synchronous = "FULL"` setting).
        cursor.execute(f"PRAGMA synchronous={self.synchronous}")
        for pragma in CONNECTION_PRAGMAS:
            cursor.execute(pragma)
        return connection


class Datastore(SQLiteDatastore):
    """eventsourcing's SQLite datastore with our pragmas on every connection."""

    def __init__(self, path: str, *, synchronous: Synchronous, lock_timeout: int = 30) -> None:
        super().__init__(path, lock_timeout=lock_timeout)
        self.pool = _Pool(db_name=path, synchronous=synchronous, lock_timeout=lock_timeout)


class Recorder(SQLiteApplicationRecorder):
    """The application recorder (rowid is the global position) with the log's side tables.

    `ids` is how a new file stores stream ids and keys; an existing file keeps its own
    format, which `create_table` reads into `self.ids`.
    """

    def __init__(self, datastore: Datastore, *, ids: IdFormat = BINARY) -> None:
        self.ids = StoredIds(ids)  # before the base class builds the create statements
        super().__init__(datastore, events_table_name=EVENTS_TABLE)
        self.insert_events_statement = (
            f"INSERT INTO {EVENTS_TABLE} (originator_id, originator_version, topic, state) "
            "VALUES (?,?,?,?)"
        )

    def create_table(self) -> None:
        """Read the format of an existing file (or keep the new one), then create the tables."""
        with self.datastore.transaction(commit=False) as c:
            c.execute(
                f"SELECT type FROM pragma_table_info('{EVENTS_TABLE}') WHERE name='originator_id'"
            )
            row = c.fetchone()
        if row is not None:
            self.ids = StoredIds(_format_of(str(row[0])))
            self.create_table_statements = self.construct_create_table_statements()
        super().create_table()

    def construct_create_table_statements(self) -> list[str]:
        """eventsourcing's events table with a stable position, then the side tables.

        The library's table keys rows by (originator_id, originator_version) and uses the
        implicit rowid as the notification id, which VACUUM may renumber. Declaring
        `rowid INTEGER PRIMARY KEY` makes it a real column (still named rowid, as the
        library's queries expect), so positions never change; the (stream, version) key
        stays, as a UNIQUE constraint.
        """
        events = (
            f"CREATE TABLE IF NOT EXISTS {EVENTS_TABLE} ("
            f"rowid INTEGER PRIMARY KEY, originator_id {self.ids.column_type} NOT NULL, "
            "originator_version INTEGER NOT NULL, topic TEXT NOT NULL, state BLOB NOT NULL, "
            "UNIQUE (originator_id, originator_version))"
        )
        return [events, *(s.format(ids=self.ids.column_type) for s in _SIDE_TABLES)]

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """Insert with one executemany and return the positions the rows took."""
        streams = self.ids.streams([parse_stream(s.originator_id) for s in stored_events])
        return self.insert_rows(
            c,
            [
                (stream, s.originator_version, s.topic, s.state)
                for stream, s in zip(streams, stored_events, strict=True)
            ],
        )

    def insert_rows(self, c: SQLiteCursor, rows: Sequence[Row]) -> list[int]:
        """Insert `(stream, version, topic, state)` rows; returns the positions they took.

        The caller holds the write lock (BEGIN IMMEDIATE), so SQLite gives the rows the
        rowids after the current maximum, in order; the maximum is checked afterwards.
        """
        c.execute(f"SELECT MAX(rowid) FROM {EVENTS_TABLE}")
        last = c.fetchone()[0] or 0
        c.executemany(self.insert_events_statement, rows)
        c.execute(f"SELECT MAX(rowid) FROM {EVENTS_TABLE}")
        end = c.fetchone()[0] or 0
        if end != last + len(rows):
            raise AssertionError(f"positions {last + 1}..{end} for {len(rows)} events")
        return list(range(last + 1, end + 1))


def _format_of(column_type: str) -> IdFormat:
    """The format of an existing log from the type of its stream id column."""
    found = {"BLOB": BINARY, "TEXT": TEXT}.get(column_type.upper())
    if found is None:
        raise ApexmemError(
            f"this log stores stream ids as {column_type!r}; apexmem reads logs that store "
            "them as BLOB (16 bytes) or TEXT (hex)"
        )
    return found
