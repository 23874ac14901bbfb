"""Statements compiled once and run through the driver: the read path a recall takes.

A recall asks some fifteen small questions; through `Connection.execute` each paid more for
SQLAlchemy's compiling, parameter and row processing than for SQLite's answer. A prepared
statement is still written in SQLAlchemy Core (so it compiles for any dialect), compiled
once per dialect, expanded for its IN lists, and run with `exec_driver_sql`. No value is
converted either way: parameters are given as stored (ids as 32-digit hex, times as integer
microseconds, see `stored_id` and `stored_time`) and rows come back as stored.

On PostgreSQL an IN list is one array parameter instead (`= ANY(%(ids)s::VARCHAR[])`): the
text is then the same for any length. A family made `keyed` (a lookup by keys, whose best
plan does not depend on the values) is prepared on the server once per connection, which
may then keep one plan for it instead of planning it on every call; the others are not
(a full-text question's plan depends on its words: a plan made for any words scanned
every row).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Final
from uuid import UUID

import psycopg
from sqlalchemy import (
    BigInteger,
    ClauseElement,
    ColumnElement,
    Connection,
    String,
    Uuid,
    type_coerce,
)
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.sqltypes import NullType, TupleType

from apexmem.domain.identities import uuid_of_int
from apexmem.events.timeutil import from_micros
from apexmem.readmodels.tables import UtcMicros, stored_micros

__all__ = [
    "Prepared",
    "as_stored",
    "driver_cursor",
    "driver_rows",
    "id_of",
    "stored_column",
    "stored_id",
    "stored_time",
    "stored_times",
    "value_of",
]


class Prepared:
    """A family of statements by shape (which optional conditions it has), each compiled once.

    `keyed`: prepared on the PostgreSQL server (see the module docstring).
    """

    def __init__(self, build: Callable[..., ClauseElement], *, keyed: bool = False) -> None:
        self._build = build
        self.keyed = keyed
        self._compiled: dict[tuple[str, Hashable], SQLCompiler] = {}
        self._expanded: dict[tuple[Any, ...], str] = {}
        self._arrays: dict[tuple[str, Hashable], str | None] = {}

    def rows(
        self, connection: Connection, params: Mapping[str, Any], *shape: Hashable
    ) -> Sequence[Any]:
        """The rows (tuples) of the statement `build(*shape)` for `params` (values as stored)."""
        return driver_rows(connection, *self.expand(connection, params, *shape), keyed=self.keyed)

    def expand(
        self, connection: Connection, params: Mapping[str, Any], *shape: Hashable
    ) -> tuple[str, Any]:
        """The SQL text with its IN lists expanded, and its parameters for the driver.

        SQLAlchemy's expansion costs more than a small query: for a positional dialect the
        text is kept per length of each IN list, and the parameters are laid out in the
        order the compiler placed them, each list in its own place.
        """
        key = (connection.dialect.name, shape)
        compiled = self._compiled.get(key)
        if compiled is None:
            built = self._build(*shape).compile(dialect=connection.dialect)
            assert isinstance(built, SQLCompiler)
            compiled = self._compiled[key] = built
        order = compiled.positiontup
        if key[0] == "postgresql" and not compiled.positional:
            text = self._arrays.get(key, "")
            if text == "":
                text = self._arrays[key] = arrays_in(compiled)
            if text is not None:
                return text, compiled.construct_params(dict(params), escape_names=False)
        if not compiled.positional or order is None or compiled.literal_execute_params:
            state = compiled.construct_expanded_state(dict(params))
            return state.statement, state.parameters
        values: list[Any] = [
            params[name] if name in params else compiled.binds[name].effective_value
            for name in order
        ]
        lengths = tuple(len(v) if isinstance(v, list | tuple) else -1 for v in values)
        args: list[Any] = []
        for value, length in zip(values, lengths, strict=True):
            if length < 0:
                args.append(value)
            else:
                args.extend(value)
        statement = self._expanded.get((key, lengths))
        if statement is None:
            state = compiled.construct_expanded_state(dict(params))
            statement = self._expanded[(key, lengths)] = state.statement
        return statement, args


_IN_LIST: Final = re.compile(r"(NOT )?IN \(__\[POSTCOMPILE_(\w+)\]\)")


def arrays_in(compiled: SQLCompiler) -> str | None:
    """The statement's text with each IN list as one array parameter, `col = ANY(%(ids)s)`
    (None when a list is used some other way and must be expanded)."""

    if any(isinstance(b.type, TupleType) for b in compiled.binds.values()):
        return None  # a row-value list has no array form here

    def array(match: re.Match[str]) -> str:
        negated, name = match.groups()
        kind = compiled.binds[name].type
        form = "<> ALL" if negated else "= ANY"
        if isinstance(kind, NullType):  # the driver's own array type for the values
            return f"{form}(%({name})s)"
        return f"{form}(%({name})s::{kind.compile(dialect=compiled.dialect)}[])"

    text = _IN_LIST.sub(array, compiled.string)
    return None if "__[POSTCOMPILE_" in text else text


def as_stored(column: ColumnElement[Any]) -> ColumnElement[Any]:
    """An id or text column as stored: compared with and returned as a plain string."""
    return type_coerce(column, String)


def stored_time(column: ColumnElement[Any]) -> ColumnElement[Any]:
    """A time column as stored: integer microseconds since the epoch."""
    return type_coerce(column, BigInteger)


def stored_column(column: Any) -> Any:
    """`column` selected as stored: a time as integer microseconds, an id as hex (see
    `value_of` for the way back), anything else as it is."""
    if isinstance(column.type, UtcMicros):
        return stored_time(column)
    return as_stored(column) if isinstance(column.type, Uuid) else column


def value_of(column: Any) -> Callable[[Any], Any] | None:
    """How a value of `column` as stored (`stored_column`) becomes the value a row holds:
    a datetime, a UUID; None when it is taken as stored."""
    if isinstance(column.type, UtcMicros):
        return lambda v: None if v is None else from_micros(v)
    if isinstance(column.type, Uuid):
        return lambda v: None if v is None else id_of(v)
    return None


def stored_id(value: UUID) -> str:
    """An id as the read model stores it."""
    return value.hex


def id_of(stored: str) -> UUID:
    """The id a stored (hex) id stands for, as `UUID(stored)` without its checks.

    A recall turns a hundred stored ids back into UUIDs, and `UUID.__init__` validated each
    in Python for longer than the rest of its handling; the read model only holds hex it
    wrote itself.
    """
    return uuid_of_int(int(stored, 16))


@contextmanager
def driver_cursor(connection: Connection) -> Iterator[Any]:
    """A cursor of the driver's own connection, inside the connection's transaction: no
    SQLAlchemy execution context or result, which cost more than a small statement."""
    cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        yield cursor
    finally:
        cursor.close()


def driver_rows(
    connection: Connection,
    statement: str,
    args: Any,
    *,
    keyed: bool = False,
    binary: bool = False,
) -> list[Any]:
    """The rows of SQL text run on the driver's own cursor; `keyed`: prepared on the
    PostgreSQL server (see the module docstring); `binary`: PostgreSQL sends the rows in
    its binary format (a vector of 256 floats is 1 kB there, twice that as hex text, and
    decoding the hex cost more than the lookup)."""
    if binary and connection.dialect.name == "postgresql":
        raw = connection.connection.driver_connection
        with raw.cursor(binary=True) as cursor:  # type: ignore[union-attr]
            cursor.execute(statement, args)
            return cursor.fetchall()  # type: ignore[no-any-return]
    with driver_cursor(connection) as cursor:
        if keyed and isinstance(cursor, psycopg.Cursor):
            _execute_prepared(cursor, statement, args)
        else:
            cursor.execute(statement, args)
        return cursor.fetchall()  # type: ignore[no-any-return]


def _execute_prepared(cursor: psycopg.Cursor[Any], statement: str, args: Any) -> None:
    """Run `statement` as a statement prepared on the server (once per connection).

    The engine turns psycopg's own preparing off (readmodels.postgres), which also ignores
    `prepare=True`: it is turned on for this statement alone.
    """
    raw = cursor.connection
    automatic = raw.prepare_threshold
    raw.prepare_threshold = 0
    try:
        cursor.execute(statement, args, prepare=True)
    finally:
        raw.prepare_threshold = automatic


def stored_times(valid_at: datetime | None, known_at: datetime | None) -> dict[str, int | None]:
    """The two time axes as stored, for the `valid_at` and `known_at` parameters."""
    return {"valid_at": stored_micros(valid_at), "known_at": stored_micros(known_at)}
