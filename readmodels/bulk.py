"""Rows written through the driver: statements compiled once, values converted by column.

Every projection writes this way, a catch-up of thousands of events and an inline write of
one alike. `Connection.execute(statement, rows)` does SQLAlchemy's per-row work (a parameter
dict and a type-processor call per value), which took longer than SQLite's own inserts on a
catch-up. Even `exec_driver_sql` builds an execution context and a result per statement:
~30 µs each, and an inline write runs about ten, a tenth of its time. Here a statement is
written in SQLAlchemy Core (so it compiles for any dialect), compiled once per dialect,
each column that needs it is mapped through its type's bind processor, and the driver's
own cursor runs it with plain tuples, inside the connection's transaction.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from operator import attrgetter, itemgetter
from typing import Any, Final, NamedTuple
from uuid import UUID

from sqlalchemy import Connection, Dialect, Insert, Table, UpdateBase, Uuid

from apexmem.readmodels.prepared import driver_cursor
from apexmem.readmodels.tables import UtcMicros, stored_micros

__all__ = ["ARRAY_ROWS", "run_many", "write_rows"]


class _Compiled(NamedTuple):
    sql: str
    names: tuple[str, ...]
    values: Callable[[dict[str, Any]], tuple[Any, ...]]
    """A row's values in the order of `names`."""
    positional: bool
    converters: tuple[tuple[int, Callable[[Any], Any]], ...]
    """(index in `names`, its type's bind processor) for each parameter that has one."""
    times: tuple[int, ...]
    """Indexes in `names` of the UtcMicros parameters."""
    hex_ids: tuple[int, ...] = ()
    """Indexes in `names` of the Uuid parameters stored as 32 hex digits (SQLite's form),
    among `converters` too: a column of UUIDs only is converted without a Python call each."""
    arrays: str | None = None
    """On PostgreSQL, an INSERT of plain values as one statement over arrays of each column
    (`INSERT ... SELECT * FROM unnest(...)`), when the statement allows it."""
    updates: bool = False
    """Whether the statement updates on conflict: one statement could not update a row that
    comes twice in a batch, so its arrays are used only for rows of distinct keys."""


_compiled: dict[tuple[str, Hashable], _Compiled] = {}


def write_rows(
    connection: Connection,
    key: Hashable,
    build: Callable[[], UpdateBase],
    rows: list[dict[str, Any]],
    *,
    distinct: bool = False,
) -> int:
    """executemany of the statement `build()` makes (compiled once per dialect and `key`)
    for `rows`, their values converted here, by column; returns the rows it changed.
    `distinct`: no two rows share a conflict key (an insert that updates on conflict may
    then be one statement over arrays too)."""
    if not rows:
        return 0
    dialect = connection.dialect
    compiled = _compiled.get((dialect.name, key))
    if compiled is None:
        compiled = _compiled[(dialect.name, key)] = _compile(build(), dialect)
    columns: list[Iterable[Any]] = list(zip(*map(compiled.values, rows), strict=True))
    for i, convert in compiled.converters:
        if i not in compiled.hex_ids:
            columns[i] = map(convert, columns[i])
        elif set(map(type, columns[i])) == _JUST_UUIDS:
            columns[i] = map(_HEX.__mod__, map(_INT, columns[i]))
        else:  # with None and ids as stored (loaded rows), which pass through
            columns[i] = [_HEX % v.int if type(v) is UUID else v for v in columns[i]]
    for i in compiled.times:
        # Few distinct times per batch (one transaction time per append, among others),
        # and datetimes hash in C: each distinct one is converted once.
        times = set(columns[i])
        stored = dict(zip(times, map(stored_micros, times), strict=True))
        columns[i] = map(stored.__getitem__, columns[i])
    arrays_fit = compiled.arrays is not None and (distinct or not compiled.updates)
    if arrays_fit and len(rows) >= ARRAY_ROWS:
        arrays = {name: list(values) for name, values in zip(compiled.names, columns, strict=True)}
        with driver_cursor(connection) as cursor:
            cursor.execute(compiled.arrays, arrays)
            return int(cursor.rowcount)
    params: list[Any] = list(zip(*columns, strict=True))
    if not compiled.positional:
        params = [dict(zip(compiled.names, values, strict=True)) for values in params]
    return run_many(connection, compiled.sql, params)


ARRAY_ROWS: Final = 16
"""Rows from which an INSERT on PostgreSQL is one statement over arrays: an executemany runs
a statement per row on the server (4.7 of a 10.7 s graph catch-up of 72,398 events went to
the facts and facts_fts rows, ~45 µs a row)."""


def run_many(connection: Connection, sql: str, params: Sequence[Any]) -> int:
    """SQL text run once per parameter set on the driver's cursor; the rows it changed."""
    with driver_cursor(connection) as cursor:
        cursor.executemany(sql, params)
        return int(cursor.rowcount)


def _compile(statement: UpdateBase, dialect: Dialect) -> _Compiled:
    compiled = statement.compile(dialect=dialect)
    names = tuple(compiled.positiontup or compiled.binds)
    converters: list[tuple[int, Callable[[Any], Any]]] = []
    times: list[int] = []
    hex_ids: list[int] = []
    for i, name in enumerate(names):
        kind = compiled.binds[name].type
        if isinstance(kind, UtcMicros):  # stored_micros also passes stored values through
            times.append(i)
        elif (process := kind.dialect_impl(dialect).bind_processor(dialect)) is not None:
            if isinstance(kind, Uuid):
                converters.append((i, _uuid_or_stored(process)))
                if process(_SAMPLE) == _HEX % _SAMPLE.int:
                    hex_ids.append(i)
            else:
                converters.append((i, process))
    values = itemgetter(*names) if len(names) > 1 else lambda row: (row[names[0]],)
    return _Compiled(
        compiled.string,
        names,
        values,
        compiled.positional,
        tuple(converters),
        tuple(times),
        tuple(hex_ids),
        _arrays(statement, compiled.string, names, dialect),
        "DO UPDATE" in compiled.string,
    )


_VALUES: Final = re.compile(
    r"VALUES \(((?:%\(\w+\)s(?:::\w+(?: \w+)*(?:\(\d+(?:, \d+)?\))?)?(?:, )?)+)\)"
)
"""A VALUES list of bound values only, each with its cast if any (`::VARCHAR(32)`,
`::DOUBLE PRECISION`), up to its own closing parenthesis."""


def _arrays(
    statement: UpdateBase, sql: str, names: tuple[str, ...], dialect: Dialect
) -> str | None:
    """`sql` as one INSERT over arrays of its columns on PostgreSQL: each bound value of its
    VALUES list becomes an array of the column's type, unnested. None elsewhere, or for a
    statement that is not an INSERT of plain bound values."""
    if dialect.name != "postgresql" or not isinstance(statement, Insert):
        return None
    found = _VALUES.search(sql)
    table = statement.table
    if found is None or not isinstance(table, Table) or set(names) - set(table.c.keys()):
        return None
    bound = re.findall(r"%\((\w+)\)s", found.group(1))
    if sorted(bound) != sorted(names):
        return None
    casts = [f"%({n})s::{table.c[n].type.compile(dialect=dialect)}[]" for n in bound]
    return f"{sql[: found.start()]}SELECT * FROM unnest({', '.join(casts)}){sql[found.end() :]}"


_SAMPLE: Final = UUID(int=0x0123456789ABCDEF0123456789ABCDEF)
_HEX: Final = "%032x"
_INT: Final = attrgetter("int")
_JUST_UUIDS: Final = {UUID}


def _uuid_or_stored(process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A Uuid bind processor that passes values already in stored form (loaded rows) through."""

    def convert(value: Any) -> Any:
        return process(value) if isinstance(value, UUID) else value

    return convert
