"""The read-model database: an SQLAlchemy engine over its own SQLite file (or a PostgreSQL
schema, see readmodels.postgres), and its tracking rows."""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Connection, bindparam, create_engine, event, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DisconnectionError, OperationalError
from sqlalchemy.schema import CreateIndex, DropIndex

from apexmem.events import diskfull
from apexmem.events.diskfull import ReadOnlyOnFullDisk, full_disk, is_full
from apexmem.events.errors import ApexmemError
from apexmem.events.sqlite import is_damaged
from apexmem.readmodels import fulltext, fulltext_pg, postgres, time_limit_pg
from apexmem.readmodels.bulk import write_rows
from apexmem.readmodels.prepared import Prepared
from apexmem.readmodels.tables import GRAPH, LAYOUT, layout, metadata, tracking

__all__ = [
    "PROGRESS_STEPS",
    "ReadCheck",
    "ReadModelStore",
    "dump",
    "time_limited",
    "tracked_position",
    "tracked_positions",
]

PROGRESS_STEPS: Final = 1_000
"""SQLite virtual-machine steps between two looks at a time limit (a few microseconds of work)."""

_INDEXES: Final = sorted(
    (index for table in metadata.sorted_tables for index in table.indexes),
    key=lambda index: str(index.name),
)
"""The secondary indexes (primary keys and unique constraints are part of their tables)."""


_RETIRED_INDEXES: Final = (
    "facts_subject",
    "facts_object",
    "facts_subject_ranked",
    "facts_object_ranked",
)
"""Indexes of stores written before: replaced by the `_walk` pair, dropped on open."""


@dataclass(frozen=True, slots=True)
class ReadCheck:
    """What the next read transaction of a thread asks first (see `ReadModelStore.check_reads`).

    `names`: the projections whose tracked positions it reads, in one statement;
    `current(positions)`: whether the read models are ready at those positions;
    `refresh()`: when not, bring them to the log, outside any transaction (the read
    transaction is then begun again).
    """

    names: tuple[str, ...]
    current: Callable[[Mapping[str, int]], bool]
    refresh: Callable[[], None]


class ReadModelStore:
    """Read models in one SQLite file (`readmodels.db`) or one PostgreSQL schema: throwaway,
    rebuilt from the log.

    `location` is the file's path, or a `postgresql://` URL; on PostgreSQL the rows are in
    `schema`, and `path` names a file in `cache` (a local directory, by default under
    ~/.cache/apexmem) that the vector index file sits beside.
    """

    def __init__(
        self,
        location: Path | str,
        *,
        schema: str = postgres.DEFAULT_SCHEMA,
        cache: Path | None = None,
    ) -> None:
        self.set_aside: tuple[Path, str] | None = None
        """Where a damaged file found on open was moved, and SQLite's error (else None)."""
        self.relaid_from: int | None = None
        """The layout found on open when it was another (the graph is projected again)."""
        self.schema: str | None = None
        """The PostgreSQL schema of the rows (None: a SQLite file)."""
        self._checks = threading.local()
        """Each thread's `ReadCheck` for its next read transaction (see `check_reads`)."""
        if postgres.is_url(location):
            assert isinstance(location, str)
            self.schema = schema
            self.path = postgres.cache_directory(location, schema, cache) / "readmodels"
            self.engine = postgres.engine_for(location, schema)
            with self.write() as connection:  # DDL is transactional: one process lays out
                metadata.create_all(connection)
                self._lay_out(connection)
                self.create_indexes(connection)
            return
        self.path = Path(location)
        self.engine = _engine(self.path)
        try:
            self._create()
        except Exception as e:
            if is_full(e):
                raise full_disk(self.path, e) from e
            if not is_damaged(e):
                if self._read_only_on_full_disk():  # opened so for reading: no room to lay out
                    raise full_disk(self.path) from e
                raise
            # Read models are derived: keep the damaged file for a look, start empty, and
            # the runners project the whole log again.
            self.engine.dispose()
            self.set_aside = (_set_aside(self.path), str(e))
            self.engine = _engine(self.path)
            self._create()

    def _read_only_on_full_disk(self) -> bool:
        with self.engine.connect() as connection:
            return isinstance(connection.connection.driver_connection, ReadOnlyOnFullDisk)

    def _create(self) -> None:
        metadata.create_all(self.engine)
        with self.engine.connect() as connection:
            connection.execution_options(immediate=True)  # one process lays out at a time
            with connection.begin():
                self._lay_out(connection)
                self.create_indexes(connection)  # a bulk load cut short leaves them out

    def _lay_out(self, connection: Connection) -> None:
        """Start the graph's tables again when they were projected with another layout.

        Read models are derived: the runner projects the whole log into the new tables.
        Other projections' tables (the vectors) and tracking rows are kept.
        """
        found = connection.execute(select(layout.c.version)).scalar()
        if found == LAYOUT:
            return
        others = select(tracking).where(tracking.c.projection != GRAPH)
        kept = [dict(r._mapping) for r in connection.execute(others)]
        projected = connection.execute(select(tracking.c.position)).first() is not None
        if found is None and not projected:  # a new store
            connection.execute(insert(layout).values(version=LAYOUT))
            return
        self.reset(connection)
        if kept:
            connection.execute(insert(tracking), kept)
        self.relaid_from = found if found is not None else 1

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One write transaction holding the database's write lock from its start.

        Everything read inside it (the tracking position first) is current, so two runners
        cannot apply the same events: the second waits, then sees the first one's position.
        """
        try:
            with self.engine.connect() as connection:
                if isinstance(connection.connection.driver_connection, ReadOnlyOnFullDisk):
                    raise full_disk(self.path)
                connection.execution_options(immediate=True)
                with connection.begin():
                    if self.schema is not None:
                        postgres.lock_writes(connection, self.schema)
                    yield connection
        except (OperationalError, sqlite3.OperationalError) as e:  # the latter from the driver
            if is_full(e):
                raise full_disk(self.path, e) from e
            raise ApexmemError(
                f"the read models in {self._where} are busy or unwritable: {e}"
            ) from e

    @property
    def _where(self) -> str:
        if self.schema is None:
            return str(self.path)
        return f"schema {self.schema} of {self.engine.url.render_as_string(hide_password=True)}"

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """One read transaction: every query inside it sees the same committed state.

        When this thread left a `ReadCheck` (`check_reads`), its tracked positions are read
        first, in one statement, and kept for the transaction: `tracked_position` answers
        from them there without asking again. When they are not current, the transaction
        ends, the check's `refresh` runs, and it begins again (with the positions read
        again, not checked a second time).
        """
        check: ReadCheck | None = self._checks.__dict__.pop("next", None)
        while True:
            with ExitStack() as stack:
                connection = stack.enter_context(self.engine.connect())
                if self.schema is not None:  # PostgreSQL: committed rows statement by statement
                    connection.execution_options(isolation_level="REPEATABLE READ")
                stack.enter_context(connection.begin())
                if check is None:
                    yield connection
                    return
                positions = tracked_positions(connection, check.names)
                if check.refresh is _NOTHING or check.current(positions):
                    connection.info[_POSITIONS] = positions
                    try:
                        yield connection
                    finally:
                        connection.info.pop(_POSITIONS, None)
                    return
            check.refresh()  # the read transaction is over: catch up, then read again
            check = ReadCheck(check.names, check.current, _NOTHING)

    def check_reads(self, check: ReadCheck | None) -> None:
        """Have the next read transaction this thread begins check `check` first (None:
        forget the one left).

        A read before which the read models must be ready (an inline projection's readiness
        check, when nothing new was seen in the log) asks so inside its own transaction: no
        transaction of its own for the check, and the tracked positions the read needs (the
        vector index's) come with the same statement.
        """
        if check is None:
            self._checks.__dict__.pop("next", None)
        else:
            self._checks.next = check

    def drop_indexes(self, connection: Connection) -> None:
        """Drop every secondary index, inside the caller's transaction (see create_indexes)."""
        for index in _INDEXES:
            connection.execute(DropIndex(index, if_exists=True))

    def create_indexes(self, connection: Connection) -> None:
        """Create every secondary index that is missing, inside the caller's transaction.

        A bulk load into empty tables drops them first and builds them once at its end.
        Missing full-text tables are created here too, filled from the graph tables.
        """
        for index in _INDEXES:
            connection.execute(CreateIndex(index, if_not_exists=True))
        for name in _RETIRED_INDEXES:
            connection.exec_driver_sql(f'DROP INDEX IF EXISTS "{name}"')
        _fulltext(connection).ensure(connection)

    def reset(self, connection: Connection) -> None:
        """Drop and recreate every table (full-text ones too) inside the caller's transaction."""
        _fulltext(connection).drop(connection)
        for table in reversed(metadata.sorted_tables):
            connection.exec_driver_sql(f'DROP TABLE IF EXISTS "{table.name}"')
        metadata.create_all(connection)
        connection.execute(insert(layout).values(version=LAYOUT))
        _fulltext(connection).ensure(connection)


# Built once: both run in every projection transaction, after every inline write.
_TRACKED: Final = Prepared(
    lambda: select(tracking.c.position).where(tracking.c.projection == bindparam("name")),
    keyed=True,
)
"""Asked by every recall (the vector index's sync): run through the driver."""
_TRACKED_MANY: Final = Prepared(
    lambda: select(tracking.c.projection, tracking.c.position).where(
        tracking.c.projection.in_(bindparam("names", expanding=True))
    ),
    keyed=True,
)
"""Every projection's position at once: the readiness check of a read (`ReadCheck`)."""
_POSITIONS: Final = "apexmem.tracked_positions"
"""Key of a connection's `info`: the tracked positions its read transaction read first."""


def _nothing() -> None:
    """A `ReadCheck` refreshed already: its positions are read, not checked again."""


_NOTHING: Final[Callable[[], None]] = _nothing
_MOVE: Final = (
    update(tracking)
    .where(tracking.c.projection == bindparam("name"))
    .values(position=bindparam("reached"))
)
_START: Final = insert(tracking).values(projection=bindparam("name"), position=bindparam("reached"))


@contextmanager
def time_limited(connection: Connection, out_of_time: Callable[[], bool]) -> Iterator[None]:
    """Stop the statement running when `out_of_time()` says so, and the block with it.

    SQLite's progress handler asks every `PROGRESS_STEPS` steps; the statement it stops
    raises "interrupted", which ends the block quietly (the caller's `out_of_time` knows
    why). A read transaction stays open and usable after it. On PostgreSQL, see
    `readmodels.time_limit_pg`.
    """
    if connection.dialect.name == "postgresql":
        with time_limit_pg.time_limited(connection, out_of_time):
            yield
        return
    raw = connection.connection.driver_connection
    assert isinstance(raw, sqlite3.Connection)
    raw.set_progress_handler(lambda: 1 if out_of_time() else 0, PROGRESS_STEPS)
    try:
        yield
    except (sqlite3.OperationalError, OperationalError) as error:
        if "interrupted" not in str(error):
            raise
    finally:
        raw.set_progress_handler(None, 0)


def tracked_position(connection: Connection, projection: str) -> int:
    """The last log position applied to `projection` (0 when it has applied nothing).

    Inside a read transaction that read it first (`ReadModelStore.check_reads`), no
    statement: the position read then (the transaction's snapshot does not move).
    """
    known: Mapping[str, int] | None = connection.info.get(_POSITIONS)
    if known is not None and projection in known:
        return known[projection]
    found = _TRACKED.rows(connection, {"name": projection})
    return int(found[0][0] or 0) if found else 0


def tracked_positions(connection: Connection, projections: Sequence[str]) -> dict[str, int]:
    """The last log position applied to each of `projections` (0 when it has applied
    nothing), read in one statement."""
    found = {
        str(name): int(position or 0)
        for name, position in _TRACKED_MANY.rows(connection, {"names": list(projections)})
    }
    return {name: found.get(name, 0) for name in projections}


def set_position(connection: Connection, projection: str, position: int) -> None:
    """Record that `projection` has applied the log up to `position` (same transaction)."""
    row = [{"name": projection, "reached": position}]
    if write_rows(connection, ("tracking", "move"), lambda: _MOVE, row) == 0:
        write_rows(connection, ("tracking", "start"), lambda: _START, row)


def dump(connection: Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows in primary-key order: what "rebuild equals incremental" compares.

    The full-text tables are included, in rowid order.
    """
    tables: dict[str, list[tuple[Any, ...]]] = {}
    for table in metadata.sorted_tables:
        order = list(table.primary_key.columns) or list(table.columns)
        rows = connection.execute(select(table).order_by(*order))
        tables[table.name] = [tuple(r) for r in rows]
    tables.update(_fulltext(connection).contents(connection))
    return tables


def _fulltext(connection: Connection) -> Any:
    """The full-text module of the connection's database (SQLite FTS5, or PostgreSQL's own)."""
    return fulltext_pg if connection.dialect.name == "postgresql" else fulltext


_STATEMENT_CACHE: Final = 2048
"""Compiled statements kept per read-model connection (a few MB at most)."""


def _set_aside(path: Path) -> Path:
    """Move a damaged database and its WAL files to `<name>.damaged-<UTC time>`."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        with suppress(FileNotFoundError):  # another process may have moved it first
            Path(f"{path}{suffix}").rename(f"{aside}{suffix}")
    return aside


def _engine(path: Path) -> Engine:
    # A recall runs some twenty statements, their IN lists of many lengths, and each length
    # is a statement text of its own: sqlite3's default cache of 128 compiled statements
    # kept evicting them, and compiling one again costs more than many answers (~6% of a
    # recall at 10,000 facts).
    def connect() -> sqlite3.Connection:
        # Connections move between threads (the FAISS follower reads the store), as with
        # SQLAlchemy's own pysqlite connect, which a creator bypasses.
        return diskfull.connect(
            path, timeout=30, cached_statements=_STATEMENT_CACHE, check_same_thread=False
        )

    engine = create_engine(f"sqlite:///{path}", creator=connect)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, record: Any) -> None:
        record.info["opened"] = time.monotonic()
        # Let SQLAlchemy's begin() emit BEGIN itself (pysqlite's own handling is off).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if not isinstance(dbapi_connection, ReadOnlyOnFullDisk):  # immutable: no changes
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA cache_size=-65536")
        # Checkpoint the WAL every ~40 MB, not every 4 MB: a catch-up commits a batch every
        # few hundred milliseconds, and frequent checkpoints copied the same pages back into
        # the database file over and over (about a tenth of a catch-up's time).
        cursor.execute("PRAGMA wal_autocheckpoint=10000")
        try:
            cursor.execute("SELECT exp(0)")
        except sqlite3.OperationalError:  # an SQLite built without its math functions
            dbapi_connection.create_function("exp", 1, math.exp, deterministic=True)
        cursor.close()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        opened = record.info.get("opened", 0.0)
        if (
            isinstance(dbapi_connection, ReadOnlyOnFullDisk)
            and time.monotonic() - opened > diskfull.RECHECK_SECS
        ):  # the pool opens another in its place, on a disk that may have room again
            raise DisconnectionError("opened read-only on a full disk")

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        immediate = connection.get_execution_options().get("immediate", False)
        # On the driver: SQLAlchemy's execution context cost more than the statement.
        driver = connection.connection.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        driver.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine
