"""The storage backends the contract tests (tests/contract) run against, and what a test
may do to each.

A new backend adds its name to LOGS (or STORES) and a branch to `open_log` (or
`open_store`); every contract test then runs against it too.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from uuid import uuid4

import psycopg

from apexmem.events import ApexmemError, EventLog, InMemoryLog, Log
from apexmem.events.postgres_log import PostgresLog
from apexmem.readmodels import ReadModels, ReadModelStore

T0: Final = datetime(2024, 1, 1, tzinfo=UTC)
LOGS: Final = ("sqlite", "memory", "postgresql")
POSTGRES_URL: Final = os.environ.get(
    "APEXMEM_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)
"""The server the PostgreSQL tests use (each test in a schema of its own, dropped after)."""
STORES: Final = ("sqlite", "postgresql")
Clock = Callable[[], datetime]


def open_log(backend: str, directory: Path, clock: Clock) -> Log:
    """A new, empty log of `backend` on `clock`."""
    if backend == "sqlite":
        return EventLog(directory / "events.db", clock=clock)
    if backend == "memory":
        return InMemoryLog(clock=clock)
    if backend == "postgresql":
        return open_postgres_log(_emptied.pop() if _emptied else fresh_schema(), clock)
    raise AssertionError(f"no such log backend: {backend}")


def fresh_schema() -> str:
    """A schema name no other test uses."""
    return f"test_{uuid4().hex[:20]}"


def open_postgres_log(schema: str, clock: Clock | None = None) -> PostgresLog:
    """The log in `schema` on the test server; a test fails (never skips) without a server."""
    try:
        return PostgresLog(POSTGRES_URL, schema=schema, clock=clock)
    except ApexmemError as e:
        raise AssertionError(
            f"the PostgreSQL tests need a server at {POSTGRES_URL} (APEXMEM_TEST_POSTGRES; "
            f".ci/run starts the local one): {e}"
        ) from e


def drop_schema(schema: str) -> None:
    """Drop a test's schema and everything in it."""
    _server().execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def vacuum_catalogs() -> bool:
    """VACUUM the test database (its system catalogs above all) when the server runs without
    autovacuum (this machine's and CI's); whether it did. Each schema a test made and
    dropped left dead rows in pg_attribute, pg_depend, pg_class (78,414 in pg_attribute
    after one full run), and every later session's planning slowed with them. The whole
    database, not the catalogs the statistics name: a test's last drops are not counted
    there yet when the run ends."""
    server = _server()
    if server.execute("SHOW autovacuum").fetchone() != ("off",):
        return False
    server.execute("VACUUM")
    return True


_connections: list[psycopg.Connection[tuple[Any, ...]]] = []


def _server() -> psycopg.Connection[tuple[Any, ...]]:
    """One connection for the tests' own statements on the server, made again when the
    server closed it (test_postgres_restart.py restarts the server)."""
    if not _connections or _connections[0].closed or _connections[0].broken:
        _connections[:] = [psycopg.connect(POSTGRES_URL, autocommit=True)]
    else:
        try:
            _connections[0].execute("SELECT 1")
        except psycopg.OperationalError:
            _connections[:] = [psycopg.connect(POSTGRES_URL, autocommit=True)]
    return _connections[0]


def discard(log: Log) -> None:
    """Close a test's log; on a server, empty its schema for the next test's log (quicker
    than creating one: a schema's tables take ~0.1 s to create and drop)."""
    log.close()
    if isinstance(log, PostgresLog):
        tables = [f'"{log.schema}".{t}' for t in ("log_events", "log_index", "log_idempotency")]
        _server().execute("; ".join(f"DELETE FROM {t}" for t in tables))
        if not _emptied:
            atexit.register(_drop_emptied)
        _emptied.append(log.schema)


_emptied: list[str] = []
"""Schemas of closed test logs, emptied, to be used again (and dropped at exit)."""


def _drop_emptied() -> None:
    while _emptied:
        drop_schema(_emptied.pop())


def open_store(backend: str, path: Path) -> ReadModels:
    """A read-model store of `backend` at `path` (opened again when it exists)."""
    if backend == "sqlite":
        return ReadModelStore(path)
    if backend == "postgresql":
        return ReadModelStore(POSTGRES_URL, schema=_schema(path), cache=path.parent)
    raise AssertionError(f"no such store backend: {backend}")


def discard_store(backend: str, path: Path) -> None:
    """Remove what `open_store(backend, path)` made outside `path` (a PostgreSQL schema)."""
    if backend == "postgresql":
        drop_schema(_schema(path))


def _schema(path: Path) -> str:
    """A schema of its own for each store path (the same when the path is opened again)."""
    return "test_" + hashlib.blake2b(str(path).encode(), digest_size=10).hexdigest()


def tamper(log: Log, position: int) -> None:
    """Change one bit of the record stored at `position`, as access to the storage could."""
    if isinstance(log, EventLog):
        db = sqlite3.connect(log.path)
        with db:
            [(state,)] = db.execute("SELECT state FROM stored_events WHERE rowid = ?", (position,))
            db.execute(
                "UPDATE stored_events SET state = ? WHERE rowid = ?", (_flipped(state), position)
            )
        db.close()
        return
    if isinstance(log, PostgresLog):
        table = f'"{log.schema}".log_events'
        [(state,)] = _server().execute(
            f"SELECT state FROM {table} WHERE position = %s", (position,)
        )
        _server().execute(
            f"UPDATE {table} SET state = %s WHERE position = %s", (_flipped(state), position)
        )
        return
    assert isinstance(log, InMemoryLog)
    rows = log._rows  # the fake's storage: what the SQLite file is to file access
    row = rows[position - 1]
    rows[position - 1] = row._replace(state=_flipped(row.state))


def _flipped(state: bytes) -> bytes:
    """`state` with its last byte's lowest bit flipped."""
    return state[:-1] + bytes([state[-1] ^ 1])
