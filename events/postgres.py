"""A memory's PostgreSQL schema: connecting (errors translated), a connection pool, and the
layout check that refuses another application's tables or another layout version.

One memory lives in one schema of one database ("apexmem" by default; a tenant gets a schema
of its own). Every part of apexmem that keeps tables there records its layout version in the
schema's `apexmem_layout` table, created first: a schema that holds tables but no such table
belongs to another application, and nothing is written to it.
"""

from __future__ import annotations

import queue
import re
import select
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

import psycopg
from psycopg.conninfo import conninfo_to_dict

from apexmem.events.errors import ApexmemError, ValidationError

__all__ = [
    "DEFAULT_SCHEMA",
    "LAYOUT_TABLE",
    "Connections",
    "Server",
    "claim_schema",
    "is_postgres_url",
    "quoted_schema",
]

DEFAULT_SCHEMA: Final = "apexmem"
LAYOUT_TABLE: Final = "apexmem_layout"
# Lower case only: written quoted here and unquoted by the read models, which then agree.
_SCHEMA_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_CONNECT_TIMEOUT: Final = 10
"""Seconds to wait for a server that does not answer (libpq waits forever by default)."""
_OPTIONS: Final = "-c lock_timeout=30s -c idle_in_transaction_session_timeout=60s"
"""Sent with the login, so setting them costs no round trip. A writer waiting 30 s for the
log's lock gives up with a clear error; a process that holds the lock and stops answering
(stopped, not killed: a killed one's connection closes) loses it after 60 s."""


def is_postgres_url(value: str) -> bool:
    """Whether `value` names a PostgreSQL database (`postgresql://...`) rather than a path."""
    return value.startswith(("postgresql://", "postgresql+psycopg://", "postgres://"))


def quoted_schema(schema: str) -> str:
    """`schema` quoted as an SQL identifier, after checking it is a plain name."""
    if not isinstance(schema, str) or _SCHEMA_NAME.fullmatch(schema) is None:
        raise ValidationError(
            "schema",
            schema,
            "is not a schema name (lower-case letters, digits and _, not starting with a digit; "
            "at most 63)",
        )
    return f'"{schema}"'


class Server:
    """Where a URL points (host, port, database, user; never the password), and connecting."""

    def __init__(self, url: str) -> None:
        url = url.replace("postgresql+psycopg://", "postgresql://", 1)  # SQLAlchemy's spelling
        try:
            parts = conninfo_to_dict(url)
        except psycopg.ProgrammingError as e:
            raise ValidationError("url", _masked(url), f"is not a PostgreSQL URL ({e})") from e
        self.url = url
        self.host = str(parts.get("host") or "localhost")
        self.port = str(parts.get("port") or "5432")
        self.database = str(parts.get("dbname") or parts.get("user") or "")
        self.timeout = int(parts.get("connect_timeout") or _CONNECT_TIMEOUT)
        self._options = f"{parts.get('options') or ''} {_OPTIONS}".strip()
        self._application = str(parts.get("application_name") or "apexmem")

    def __str__(self) -> str:
        return f"PostgreSQL at {self.host}:{self.port} (database {self.database!r})"

    def connect(self, *, autocommit: bool = True, options: str = "") -> psycopg.Connection[Any]:
        """A new connection with apexmem's session settings (and `options`, more `-c name=value`
        of the caller's); one clear error if it fails."""
        try:
            connection = psycopg.connect(
                self.url,
                autocommit=autocommit,
                connect_timeout=self.timeout,
                options=f"{self._options} {options}".strip(),
                application_name=self._application,
            )
        except psycopg.Error as e:
            raise ApexmemError(f"cannot connect to {self}: {_reason(e)}") from e
        return connection


class Connections:
    """Open autocommit connections to one server, reused: each used by one thread at a time,
    made on demand."""

    def __init__(self, server: Server, *, options: str = "") -> None:
        self.server = server
        self._options = options
        self._idle: queue.LifoQueue[psycopg.Connection[Any]] = queue.LifoQueue()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the pool; a broken one is closed rather than reused."""
        while True:
            try:
                connection = self._idle.get_nowait()
            except queue.Empty:
                connection = self.server.connect(options=self._options)
                break
            if _open(connection):
                break
            connection.close()  # the server went away (restarted, or ended the session)
        try:
            yield connection
        finally:
            if connection.broken or connection.closed:
                connection.close()
            else:
                self._idle.put(connection)

    def close(self) -> None:
        """Close every idle connection."""
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


def claim_schema(
    connection: psycopg.Connection[Any],
    schema: str,
    part: str,
    version: int,
    tables: Sequence[str],
    *,
    create: bool,
) -> None:
    """Check `schema` holds `part` at layout `version` (or nothing), creating its `tables`
    (statements with `{schema}`) when `create`; raises ApexmemError and writes nothing
    when the schema belongs to another application or layout version.

    Runs in one transaction under an advisory lock, so processes opening the same new
    memory at once create it once.
    """
    name = quoted_schema(schema)
    server = f"schema {schema!r} of database {connection.info.dbname!r}"
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"apexmem:{schema}",))
        found = [
            row[0]
            for row in connection.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
                (schema,),
            )
        ]
        if found and LAYOUT_TABLE not in found:
            shown = ", ".join(sorted(found)[:5])
            raise ApexmemError(
                f"{server} holds tables of another application ({shown}); "
                "apexmem writes nothing there: name another schema or database"
            )
        held = None
        if found:
            row = connection.execute(
                f"SELECT version FROM {name}.{LAYOUT_TABLE} WHERE part = %s", (part,)
            ).fetchone()
            held = None if row is None else int(row[0])
        if held is not None and held != version:
            raise ApexmemError(
                f"{server} holds an apexmem {part} of layout version {held}; this apexmem "
                f"reads version {version}: open it with the apexmem that wrote it"
            )
        if held is not None:
            return
        if not create:
            raise ApexmemError(f"{server} holds no apexmem memory (apexmem init creates one)")
        connection.execute(f"CREATE SCHEMA IF NOT EXISTS {name}")
        connection.execute(
            f"CREATE TABLE IF NOT EXISTS {name}.{LAYOUT_TABLE} "
            "(part text PRIMARY KEY, version integer NOT NULL)"
        )
        for statement in tables:
            connection.execute(statement.format(schema=name))
        connection.execute(f"INSERT INTO {name}.{LAYOUT_TABLE} VALUES (%s, %s)", (part, version))


def _open(connection: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection is still open, without a round trip: the server sends an
    idle session nothing, so a socket with something to read was closed or told it ends."""
    try:
        readable, _, _ = select.select([connection.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return False
    return not readable


def _reason(error: psycopg.Error) -> str:
    """The server's or libpq's reason, on one line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines) or type(error).__name__


def _masked(url: str) -> str:
    """`url` without its password, to show in a message."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
