"""The believed edges of a few entities, strongest first: what a recall's last hop reads.

A busy entity (a city, a hobby, a category) has thousands of edges and a recall keeps ten:
its edges are read in the order of the index on (end, expired_at, confidence, fact_id),
most confident first, a few per side of each entity, and the edges recalls have returned
(their retrieval count raises their weight) apart, through the same index without reading
the other edges' rows. Rows are as stored (ids as 32-digit hex, times as microseconds), in
the column order of `walk_columns`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import (
    BindParameter,
    ClauseElement,
    Connection,
    bindparam,
    func,
    literal_column,
    select,
    union,
    union_all,
)

from apexmem.readmodels.facts import prepared_believed
from apexmem.readmodels.prepared import Prepared, as_stored, stored_time
from apexmem.readmodels.recall import fact_key_columns
from apexmem.readmodels.tables import facts, retrievals

__all__ = ["MAX_ENTITIES", "retrieved_edges", "strongest_edges", "walk_columns"]

MAX_ENTITIES: Final = 32
"""Entities read strongest first in one hop at most (a statement each)."""


def walk_columns() -> list[Any]:
    """A walked edge's columns: a `FactKey`'s, then confidence, retrieval count, valid_from,
    observed_at."""
    return [
        *fact_key_columns(),
        facts.c.confidence,
        func.coalesce(retrievals.c.count, 0.0),
        stored_time(facts.c.valid_from),
        stored_time(facts.c.observed_at),
    ]


def _strongest_statement(
    valid: bool, typed: bool, fading: bool, on_postgresql: bool = False
) -> ClauseElement:
    """Each side's `top` edges by confidence. On PostgreSQL ordered by expired_at first (null
    in every row read), then confidence and fact_id: `expired_at IS NULL` does not let its
    planner read the index in confidence order, so it read every edge of a hub from the
    table and sorted them (2,147 edges of a company: 7.4 ms, 56 ms from disk); in the
    index's own order it walks the index backwards and stops at `top` (1.5 ms). SQLite
    walks it so for confidence alone (a NULLS FIRST order would make it sort instead).

    Prepared on the PostgreSQL server (`keyed`): the walk down one entity's index entries
    is the plan whatever the entity, and planning it took longer than running it (0.45 of
    ~1.1 ms, a statement per entity of the last hop, ten in a recall of a person)."""
    joined = facts.outerjoin(retrievals, retrievals.c.fact_id == facts.c.fact_id)
    order = [facts.c.confidence.desc()]
    if on_postgresql:
        order = [facts.c.expired_at.desc().nulls_first(), *order, facts.c.fact_id.desc()]
    node: BindParameter[Any] = bindparam("node")
    parts = []
    for side, end in enumerate((facts.c.subject_id, facts.c.object_id)):
        part = (
            select(literal_column(str(side)).label("side"), *walk_columns())
            .select_from(joined)
            .where(
                as_stored(end) == node,
                facts.c.object_id.is_not(None),
                *prepared_believed(valid, False, typed, fading),
            )
            .order_by(*order)
            .limit(bindparam("top"))
        )
        parts.append(select(part.subquery()))
    return union_all(*parts)


def _retrieved_statement(valid: bool, typed: bool, fading: bool) -> ClauseElement:
    found = []
    for name, end in (("subjects", "subject_id"), ("objects", "object_id")):
        walked, counted = facts.alias(f"by_{end}"), retrievals.alias(f"counted_{end}")
        ids: BindParameter[Any] = bindparam(name, expanding=True)
        found.append(
            select(walked.c.fact_id)
            .join(counted, counted.c.fact_id == walked.c.fact_id)
            .where(as_stored(walked.c[end]).in_(ids), walked.c.expired_at.is_(None))
        )
    return (
        select(*walk_columns())
        .select_from(facts.outerjoin(retrievals, retrievals.c.fact_id == facts.c.fact_id))
        .where(
            facts.c.fact_id.in_(union(*found)),
            facts.c.object_id.is_not(None),
            *prepared_believed(valid, False, typed, fading),
        )
    )


_STRONGEST: Final = Prepared(_strongest_statement, keyed=True)
_RETRIEVED: Final = Prepared(_retrieved_statement)


def strongest_edges(
    connection: Connection,
    ids: Sequence[str],
    *,
    top: int,
    params: dict[str, Any],
    shape: tuple[bool, bool, bool],
) -> list[Any]:
    """The `top` most confident believed edges (current ones: `known_at` unset) of each side
    of each entity in `ids`: rows of the side (`2 * i` where `ids[i]` is the subject,
    `2 * i + 1` the object), then `walk_columns`. `params` and `shape` (valid_at, edge
    types, fading given) are those of the walk. One statement per entity: one statement for
    them all would be compiled again for every number of entities."""
    found = []
    on_postgresql = connection.dialect.name == "postgresql"
    for i, node in enumerate(ids):
        given = {**params, "node": node, "top": top}
        rows = _STRONGEST.rows(connection, given, *shape, on_postgresql)
        found += [(2 * i + row[0], *row[1:]) for row in rows]
    return found


def retrieved_edges(
    connection: Connection,
    subjects: Sequence[str],
    objects: Sequence[str],
    *,
    params: dict[str, Any],
    shape: tuple[bool, bool, bool],
) -> Sequence[Any]:
    """The believed current edges recalls have returned (a retrieval count) whose subject is
    in `subjects` or object in `objects`: rows of `walk_columns`."""
    given = {**params, "subjects": list(subjects), "objects": list(objects)}
    return _RETRIEVED.rows(connection, given, *shape)
