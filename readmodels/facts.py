"""Fact queries on both time axes: valid at T (the world) and known at S (the store).

valid at T:  valid_from <= T < valid_until (valid_until unset: open-ended)
known at S:  recorded_at <= S and (expired_at unset or expired_at > S)
A query is asked at a moment (`readmodels.moment`): without `valid_at`, facts valid at its
`now` (the memory's clock, or the `known_at` asked about) are current, open-ended or ending
later (the seeds' "active" edge; a fact true until 2030 is current today); `valid(None)`
alone, which only upkeep asks, means open-ended. Without `known_at`, the state the store
believes now (the open row).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final
from uuid import UUID

import msgspec
from sqlalchemy import (
    BigInteger,
    BindParameter,
    ColumnElement,
    Connection,
    Select,
    and_,
    bindparam,
    func,
    or_,
    select,
)

from apexmem.readmodels.decay import Fading, prepared_fresh
from apexmem.readmodels.entities import entity_groups, find_entities
from apexmem.readmodels.moment import EVERY_FACT, Lens
from apexmem.readmodels.prepared import Prepared, as_stored, stored_column, value_of
from apexmem.readmodels.rows import FactRow
from apexmem.readmodels.tables import entities, facts

__all__ = [
    "STATES_OF",
    "believed",
    "edge_history",
    "fact_row",
    "fact_rows",
    "fact_states",
    "facts_about",
    "facts_of",
    "known",
    "prepared_believed",
    "rows_statement",
    "seen_by",
    "slots_of",
    "stored_rows_statement",
    "valid",
]

_subject = entities.alias("subject_entity")
_object = entities.alias("object_entity")
_ROWS: Final = select(
    *facts.c,
    _subject.c.name.label("subject"),
    func.coalesce(_object.c.name, facts.c.value).label("object"),
).select_from(
    facts.join(_subject, _subject.c.entity_id == facts.c.subject_id).outerjoin(
        _object, _object.c.entity_id == facts.c.object_id
    )
)
_CHUNK: Final = 400
_ROW_COLUMNS: Final = list(_ROWS.selected_columns)
_TAKEN: Final = [
    (at, column.name, value_of(column))
    for at, column in enumerate(_ROW_COLUMNS)
    if column.name in FactRow.__struct_fields__
]
"""Where a stored row (`stored_rows_statement`) holds each field of a `FactRow`, and how its
value is converted (None: taken as stored)."""


def rows_statement() -> Select[Any]:
    """Fact rows with the subject's and the object's names; add a WHERE and run `fact_rows`."""
    return _ROWS


def stored_rows_statement() -> Select[Any]:
    """`rows_statement` with its values as stored (ids as hex, times as microseconds), for
    a `Prepared` statement; `fact_row` converts a row."""
    return _ROWS.with_only_columns(
        *(stored_column(c) for c in _ROW_COLUMNS), maintain_column_froms=True
    )


def fact_row(stored: Sequence[Any]) -> FactRow:
    """The `FactRow` of a row of `stored_rows_statement`."""
    return FactRow(
        **{
            name: stored[at] if convert is None else convert(stored[at])
            for at, name, convert in _TAKEN
        }
    )


_Time = datetime | BindParameter[Any] | None


def believed(
    valid_at: _Time,
    known_at: _Time,
    edge_types: Sequence[str] | BindParameter[Any] = (),
    fading: Fading | None = None,
    *,
    valid_end: _Time = None,
) -> list[ColumnElement[bool]]:
    """The conditions of a believed version, valid and known at the times asked, of these types
    (and not faded, when `fading` is given); valid at some time in [valid_at, valid_end)
    when `valid_end` is given.

    A prepared statement passes bound parameters instead of values (see `prepared_believed`).
    """
    where = [facts.c.standing == "believed", known(known_at), valid(valid_at, valid_end)]
    if fading is not None:
        where.append(fading.condition())
    if isinstance(edge_types, BindParameter):
        where.append(facts.c.edge_type.in_(edge_types))
    elif edge_types:
        where.append(facts.c.edge_type.in_(list(edge_types)))
    return where


def prepared_believed(
    valid: bool, known: bool, typed: bool, fading: bool = False
) -> list[ColumnElement[bool]]:
    """`believed` for a `Prepared` statement: the parameters `valid_at` and `valid_end` (the
    window a version must overlap) when `valid`, `known_at` when `known` (as stored:
    microseconds; see `Lens.params`), the list `edge_types` when `typed`, and those of
    `prepared_fresh` (faded facts left out) when `fading`."""
    where = believed(
        bindparam("valid_at", type_=BigInteger) if valid else None,
        bindparam("known_at", type_=BigInteger) if known else None,
        bindparam("edge_types", expanding=True) if typed else (),
        valid_end=bindparam("valid_end", type_=BigInteger) if valid else None,
    )
    return [*where, prepared_fresh()] if fading else where


def known(known_at: _Time) -> ColumnElement[bool]:
    """The fact states the store held at `known_at` (now, when None)."""
    if known_at is None:
        return facts.c.expired_at.is_(None)
    return and_(
        facts.c.recorded_at <= known_at,
        or_(facts.c.expired_at.is_(None), facts.c.expired_at > known_at),
    )


def valid(valid_at: _Time, valid_end: _Time = None) -> ColumnElement[bool]:
    """The versions true in the world at `valid_at`, or at some time in [valid_at,
    valid_end) when `valid_end` is given (their validity overlaps that window); open-ended
    ones when `valid_at` is None (a caller asking about now passes the clock's time, see
    `Moment.span`)."""
    if valid_at is None:
        return facts.c.valid_until.is_(None)
    began = facts.c.valid_from <= valid_at if valid_end is None else facts.c.valid_from < valid_end
    return and_(began, or_(facts.c.valid_until.is_(None), facts.c.valid_until > valid_at))


def seen_by(lens: Lens) -> list[ColumnElement[bool]]:
    """`believed` for what `lens` sees (its valid span, moment, edge types and fading)."""
    span = lens.span
    return believed(
        None if span is None else span[0],
        lens.known_at,
        lens.edge_types,
        lens.fading,
        valid_end=None if span is None else span[1],
    )


def fact_rows(connection: Connection, statement: Select[Any]) -> list[FactRow]:
    """Run a statement built on `_ROWS` and convert its rows."""
    return [
        msgspec.convert(row, FactRow, from_attributes=True) for row in connection.execute(statement)
    ]


def fact_states(connection: Connection, keys: Sequence[tuple[UUID, int]]) -> list[FactRow]:
    """The fact rows with these (fact_id, position) keys, in the order of `keys`."""
    wanted = set(keys)
    ids = list(dict.fromkeys(fact_id.hex for fact_id, _ in keys))
    found: dict[tuple[UUID, int], FactRow] = {}
    for i in range(0, len(ids), _CHUNK):
        for stored in STATES_OF.rows(connection, {"ids": ids[i : i + _CHUNK]}):
            row = fact_row(stored)
            if (row.fact_id, row.position) in wanted:
                found[(row.fact_id, row.position)] = row
    return [found[k] for k in keys if k in found]


STATES_OF: Final = Prepared(
    lambda: stored_rows_statement().where(
        as_stored(facts.c.fact_id).in_(bindparam("ids", expanding=True))
    ),
    keyed=True,
)
"""Every state of the facts `ids` (hex), as stored: by fact_id, the primary key's prefix (a
row-value IN over both columns was a scan)."""


def facts_about(
    connection: Connection,
    entity: str,
    *,
    lens: Lens = EVERY_FACT,
    entity_type: str | None = None,
) -> list[FactRow]:
    """Believed facts with the named entity at either end (subject or object), as `lens`
    sees them.

    The name is looked up as `find_entities` does (exact, then prefix, as known at the
    lens's moment); an unknown name gives an empty list.
    """
    found = find_entities(connection, entity, known_at=lens.known_at, entity_type=entity_type)
    ids = [m for row in found for m in (row.entity_id, *row.merged)]
    return facts_of(connection, ids, lens=lens)


def facts_of(
    connection: Connection,
    ids: Sequence[UUID],
    *,
    lens: Lens = EVERY_FACT,
    edges_only: bool = False,
) -> list[FactRow]:
    """Believed facts touching any of `ids` as `lens` sees them, ordered by subject,
    relation and valid_from."""
    found: dict[tuple[UUID, int], FactRow] = {}
    params = lens.params()
    stored = [i.hex for i in ids]
    for i in range(0, len(stored), _CHUNK):
        params["ids"] = stored[i : i + _CHUNK]
        for values in _TOUCHING.rows(connection, params, edges_only, *lens.shape()):
            row = fact_row(values)
            found[(row.fact_id, row.position)] = row
    return sorted(found.values(), key=lambda r: (r.subject, r.relation, r.valid_from, r.position))


def _touching(edges_only: bool, valid: bool, known: bool, typed: bool, fading: bool) -> Select[Any]:
    """The stored rows of `facts_of`: facts with one of `ids` as subject or object, seen as
    `prepared_believed` says."""
    ids: BindParameter[Any] = bindparam("ids", expanding=True)
    where = [
        or_(as_stored(facts.c.subject_id).in_(ids), as_stored(facts.c.object_id).in_(ids)),
        *prepared_believed(valid, known, typed, fading),
    ]
    if edges_only:
        where.append(facts.c.object_id.is_not(None))
    return stored_rows_statement().where(*where)


_TOUCHING: Final = Prepared(_touching, keyed=True)


def edge_history(
    connection: Connection,
    subject: str,
    relations: Sequence[str],
    *,
    known_at: datetime | None = None,
    limit: int = 100,
) -> list[FactRow]:
    """Every version of the subject's facts with these relations, newest valid_from first.

    Superseded, historical, outranked and withdrawn versions are all listed, each in the
    state the store holds (or held at `known_at`); `standing` says which is which.
    """
    found = find_entities(connection, subject, known_at=known_at)
    if not found:
        return []
    groups = entity_groups(connection, [r.entity_id for r in found], known_at=known_at)
    ids = [m for members in groups.values() for m in members]
    statement = (
        _ROWS.where(
            facts.c.subject_id.in_(ids),
            facts.c.relation.in_(list(relations)),
            known(known_at),
        )
        .order_by(facts.c.valid_from.desc(), facts.c.position.desc())
        .limit(limit)
    )
    return fact_rows(connection, statement)


def slots_of(connection: Connection, ids: Sequence[UUID]) -> list[UUID]:
    """Every slot with one of these entities as subject or object."""
    slots: dict[UUID, None] = {}
    for i in range(0, len(ids), _CHUNK):
        part = list(ids[i : i + _CHUNK])
        statement = (
            select(facts.c.slot_id, func.min(facts.c.position))
            .where(or_(facts.c.subject_id.in_(part), facts.c.object_id.in_(part)))
            .group_by(facts.c.slot_id)
        )
        slots.update((r[0], None) for r in connection.execute(statement))
    return list(slots)
