"""Read models on PostgreSQL: the engine over one schema, its write lock, and the local
directory its vector index file lives in.

A memory's read models are one schema (tenants get a schema each): every table name in
`readmodels.tables` and in the raw SQL is unqualified, found through the connection's
`search_path`. The SQLite file has a write lock of its own (BEGIN IMMEDIATE); here a
transaction-level advisory lock keyed by the schema plays that part.
"""

from __future__ import annotations

import re
import threading
import weakref
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Connection, Uuid, create_engine, make_url, text
from sqlalchemy.engine import URL, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import TypeCompiler

from apexmem.events.errors import ApexmemError, ValidationError
from apexmem.events.postgres import is_postgres_url

__all__ = [
    "DEFAULT_SCHEMA",
    "analyze_if_grown",
    "cache_directory",
    "engine_for",
    "is_url",
    "lock_writes",
    "postgres_url",
]

DEFAULT_SCHEMA: Final = "apexmem"
"""The schema of a memory's read models when none is named."""

_SCHEMA: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_LOCK_CLASS: Final = 0x61_706D  # "apm": apart from other applications' advisory locks
MANY_EVENTS: Final = 500
"""Events a catch-up applies before `analyze_if_grown` looks at the tables at all."""
_GROWTH: Final = 1.2
"""A table this many times the size it had at its last ANALYZE (or never analyzed) grew."""
_LEAST_PAGES: Final = 8
"""Tables under this many pages (64 kB) are scanned whole in no time: never analyzed here."""
# A table grew when it has no statistics at all, or when the rows changed since its last
# ANALYZE are a fifth of those it has. Its size in pages against `relpages` alone was not
# enough: CREATE INDEX (after a bulk load from empty) sets `relpages` without statistics,
# and the facts table of a 100,000-fact catch-up was left with none.
_GROWN: Final = f"""
    SELECT c.oid::regclass::text
    FROM pg_class AS c
    LEFT JOIN pg_stat_all_tables AS s ON s.relid = c.oid
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
      AND pg_has_role(c.relowner, 'USAGE')  -- only an owner may (else autovacuum's to do)
      AND pg_relation_size(c.oid) / current_setting('block_size')::int >= {_LEAST_PAGES}
      AND (pg_relation_size(c.oid) / current_setting('block_size')::int
               > {_GROWTH} * greatest(c.relpages, 0)
           OR NOT EXISTS (SELECT FROM pg_stats AS t
                          WHERE t.schemaname = current_schema() AND t.tablename = c.relname)
           OR coalesce(s.n_mod_since_analyze, 0)
               > {_GROWTH - 1:.2f} * greatest(c.reltuples, s.n_live_tup, 0))
    ORDER BY 1"""


_uncounted: weakref.WeakKeyDictionary[Engine, int] = weakref.WeakKeyDictionary()
"""Events applied through each engine since `analyze_if_grown` last looked at its tables."""
_UNCOUNTED_LOCK: Final = threading.Lock()


@compiles(Uuid, "postgresql")
def _id_type(type_: Uuid[Any], compiler: TypeCompiler, **kw: Any) -> str:
    """Ids kept as 32 hex digits are VARCHAR(32) here, not CHAR(32): psycopg binds text as
    VARCHAR, and a CHAR column compared with one is cast, which keeps its index out."""
    if type_.native_uuid:
        return str(compiler.visit_uuid(type_, **kw))  # type: ignore[attr-defined]
    return "VARCHAR(32)"


def is_url(location: object) -> bool:
    """Whether `location` names a PostgreSQL database (else it is a SQLite file's path)."""
    return isinstance(location, str) and is_postgres_url(location)


def postgres_url(location: str) -> URL:
    """`location` as an SQLAlchemy URL on the psycopg 3 driver (`postgresql://` names it too)."""
    url = make_url(location)
    if url.drivername in ("postgresql", "postgresql+psycopg", "postgres"):
        return url.set(drivername="postgresql+psycopg")
    raise ValidationError("url", location, "must be postgresql:// or postgresql+psycopg://")


def checked_schema(schema: str) -> str:
    """`schema` when it is a plain lower-case identifier (it is written into SQL unquoted)."""
    if not _SCHEMA.fullmatch(schema):
        raise ValidationError("schema", schema, "must be lower-case letters, digits and _")
    return schema


def engine_for(location: str, schema: str) -> Engine:
    """An engine whose connections see `schema` first; the schema is created if missing."""
    url = postgres_url(location)
    schema = checked_schema(schema)
    engine = create_engine(
        url,
        # No server-side prepared statements: a generic plan cannot see the full-text query
        # (a bound parameter) and scanned every row instead of using the GIN index.
        connect_args={"options": _options(schema), "prepare_threshold": None},
        pool_pre_ping=True,
    )
    try:
        with engine.connect() as connection, connection.begin():
            lock_writes(connection, schema)  # two processes opening a new memory at once
            connection.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    except DBAPIError as e:
        engine.dispose()
        shown = url.render_as_string(hide_password=True)
        reason = "; ".join(line.strip() for line in str(e.orig).splitlines() if line.strip())
        raise ApexmemError(f"cannot open the read models at {shown}: {reason}") from e
    return engine


def _options(schema: str) -> str:
    """The settings of every connection to the read models.

    A recall asks some twenty small questions and waits for each: neither JIT compiling
    nor parallel workers pay for themselves there. A plan costed above `jit_above_cost`
    (a join over a thousand candidate rows is) spent half a second compiling, and
    starting a parallel worker costs more than the scan it shares (both measured on
    bench/pg_read_models.py at 100,000 facts).
    """
    return f"-csearch_path={schema} -cjit=off -cmax_parallel_workers_per_gather=0"


def analyze_if_grown(engine: Engine, applied: int) -> list[str]:
    """After a catch-up of `applied` events, bring the tables that grew up to date for the
    planner: VACUUM (ANALYZE) each, which gathers its statistics, marks its settled pages
    all-visible and moves its full-text (GIN) index's pending entries into the index. The
    tables, by name (none on SQLite, or when fewer than `MANY_EVENTS` were applied through
    `engine` since it last looked: a follower's or an inline write's catch-ups of a few
    events each add up).

    Autovacuum does all three in time on a server that runs it; one that lags behind a bulk
    catch-up (or runs with it off) leaves a planner without statistics, which scans whole
    tables; GIN pending lists that every full-text question reads row by row; and no page
    all-visible, so no index-only scan: the read of a hub's edges with a retrieval count
    fetched 4,980 rows from the heap (14 ms at 1,000,000 facts) where the index held all it
    needed. The cost is bounded: ANALYZE reads a sample of each table, VACUUM the pages
    changed since it last ran (3.6 s for every table after a 1,000,000-fact catch-up), and a
    pending list is at most `gin_pending_list_limit`.
    """
    if engine.dialect.name != "postgresql":
        return []
    with _UNCOUNTED_LOCK:
        applied += _uncounted.pop(engine, 0)
        if applied < MANY_EVENTS:
            _uncounted[engine] = applied
            return []
    # VACUUM runs outside a transaction only.
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        grown = list(connection.exec_driver_sql(_GROWN).scalars())
        for table in grown:
            connection.exec_driver_sql(f"VACUUM (ANALYZE) {table}")
    return grown


def lock_writes(connection: Connection, schema: str) -> None:
    """Hold the schema's write lock until the connection's transaction ends."""
    connection.execute(
        text("SELECT pg_advisory_xact_lock(:kind, hashtext(:schema))"),
        {"kind": _LOCK_CLASS, "schema": schema},
    )


def cache_directory(location: str, schema: str, given: Path | None) -> Path:
    """Where this process keeps local files of the memory (its vector index): `given`, or
    ~/.cache/apexmem/<host>/<database>/<schema>/, created if missing."""
    if given is None:
        url = postgres_url(location)
        host = f"{url.host or 'localhost'}-{url.port or 5432}"
        given = Path.home() / ".cache" / "apexmem" / host / (url.database or "postgres") / schema
    given.mkdir(parents=True, exist_ok=True)
    return given
