"""eventsourcing's SQLite recorder, plus the side tables the log writes in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import (
    SQLiteAggregateRecorder,
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteDatastore,
)

__all__ = ["EVENTS_TABLE", "Datastore", "Recorder", "Synchronous"]

Synchronous = Literal["NORMAL", "FULL"]
EVENTS_TABLE: Final = "stored_events"

_SIDE_TABLES: Final = (
    # Time index and hash chain: one row per position, written with the event.
    "CREATE TABLE IF NOT EXISTS log_index ("
    "position INTEGER PRIMARY KEY, recorded_at INTEGER NOT NULL, chain BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS log_index_recorded_at ON log_index (recorded_at)",
    # Idempotency keys: a repeated key returns the first append's positions and receipt.
    "CREATE TABLE IF NOT EXISTS idempotency ("
    "key TEXT PRIMARY KEY, first_position INTEGER, last_position INTEGER, "
    "recorded_at INTEGER NOT NULL, receipt BLOB)",
    # Lookup keys: fact and message ids to the position of the event that created them.
    "CREATE TABLE IF NOT EXISTS event_keys (key TEXT PRIMARY KEY, position INTEGER NOT NULL)",
)


class _Pool(SQLiteConnectionPool):
    def __init__(self, *, db_name: str, synchronous: Synchronous, lock_timeout: int) -> None:
        self.synchronous = synchronous
        super().__init__(db_name=db_name, lock_timeout=lock_timeout, pool_size=4)

    def _create_connection(self) -> SQLiteConnection:
        connection = super()._create_connection()
        cursor = connection.cursor()
        # NORMAL in WAL mode loses no committed transaction on a process crash, only on power
        # loss; FULL syncs every commit (the `synchronous = "FULL"` setting).
        cursor.execute(f"PRAGMA synchronous={self.synchronous}")
        cursor.execute("PRAGMA cache_size=-65536")
        # Checkpoint the WAL every ~40 MB instead of every 4 MB: fewer, larger copies back
        # into the database file, which dominated commit time for batched appends.
        cursor.execute("PRAGMA wal_autocheckpoint=10000")
        return connection


class Datastore(SQLiteDatastore):
    """eventsourcing's SQLite datastore with our pragmas on every connection."""

    def __init__(self, path: str, *, synchronous: Synchronous, lock_timeout: int = 30) -> None:
        super().__init__(path, lock_timeout=lock_timeout)
        self.pool = _Pool(db_name=path, synchronous=synchronous, lock_timeout=lock_timeout)


class Recorder(SQLiteApplicationRecorder):
    """The application recorder (rowid is the global position) with the log's side tables."""

    def __init__(self, datastore: Datastore) -> None:
        super().__init__(datastore, events_table_name=EVENTS_TABLE)
        self.insert_events_statement = (
            f"INSERT INTO {EVENTS_TABLE} (originator_id, originator_version, topic, state) "
            "VALUES (?,?,?,?)"
        )

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
            "rowid INTEGER PRIMARY KEY, originator_id TEXT NOT NULL, "
            "originator_version INTEGER NOT NULL, topic TEXT NOT NULL, state BLOB NOT NULL, "
            "UNIQUE (originator_id, originator_version))"
        )
        return [events, *_SIDE_TABLES]

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """Insert with one executemany and return the positions the rows took.

        The caller holds the write lock (BEGIN IMMEDIATE), so SQLite gives the rows the
        rowids after the current maximum, in order; the maximum is checked afterwards.
        """
        c.execute(f"SELECT MAX(rowid) FROM {EVENTS_TABLE}")
        last = c.fetchone()[0] or 0
        SQLiteAggregateRecorder._insert_events(self, c, stored_events, **kwargs)
        c.execute(f"SELECT MAX(rowid) FROM {EVENTS_TABLE}")
        end = c.fetchone()[0] or 0
        if end != last + len(stored_events):
            raise AssertionError(f"positions {last + 1}..{end} for {len(stored_events)} events")
        return list(range(last + 1, end + 1))
