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
    ARRAY,
    BindParameter,
    ClauseElement,
    Connection,
    bindparam,
    func,
    literal_column,
    select,
    true,
    union,
    union_all,
)
from sqlalchemy.types import String

from apexmem.readmodels.facts import prepared_believed
from apexmem.readmodels.prepared import Prepared, as_stored, stored_time
from apexmem.readmodels.recall import fact_key_columns
from apexmem.readmodels.tables import facts, retrievals

__all__ = ["MAX_ENTITIES", "retrieved_edges", "strongest_edges", "walk_columns"]

MAX_ENTITIES: Final = 32
"""Entities read strongest first in one hop at most."""


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
    """Each side's `top` edges by confidence, as (side, then `walk_columns`). SQLite: of the
    one entity `node` (side 0 or 1), a statement per entity. PostgreSQL: of every entity in
    the array `nodes` at once (side `2 * i` or `2 * i + 1` for the entity at index i), each
    side a lateral walk down that entity's index entries: a statement per entity cost a
    round trip each (0.3 of 0.5 ms; nine in a recall of a person, 4.3 ms of the slowest
    recalls' SQL at 200,000 facts).

    On PostgreSQL ordered by expired_at first (null in every row read), then confidence and
    fact_id: `expired_at IS NULL` does not let its planner read the index in confidence
    order, so it read every edge of a hub from the table and sorted them (2,147 edges of a
    company: 7.4 ms, 56 ms from disk); in the index's own order it walks the index
    backwards and stops at `top` (1.5 ms). SQLite walks it so for confidence alone (a NULLS
    FIRST order would make it sort instead).

    Prepared on the PostgreSQL server (`keyed`): the walk down each entity's index entries
    is the plan whatever the entities, and planning it took longer than running it."""
    joined = facts.outerjoin(retrievals, retrievals.c.fact_id == facts.c.fact_id)
    order = [facts.c.confidence.desc()]
    asked = None
    node: Any = bindparam("node")
    if on_postgresql:
        order = [facts.c.expired_at.desc().nulls_first(), *order, facts.c.fact_id.desc()]
        nodes = func.unnest(bindparam("nodes", type_=ARRAY(String)))
        asked = nodes.table_valued("node", with_ordinality="n").render_derived(name="asked")
        node = asked.c.node
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
        if asked is None:
            parts.append(select(part.subquery()))
            continue
        walked = part.lateral(f"side_{side}")
        place = ((asked.c.n - 1) * 2 + walked.c.side).label("side")
        columns = [c for c in walked.c if c.key != "side"]
        parts.append(select(place, *columns).select_from(asked.join(walked, true())))
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
    types, fading given) are those of the walk. On PostgreSQL one statement for them all
    (an array of ids: one text for any number); on SQLite one per entity (a statement for
    them all would be compiled again for every number of entities, and a statement there
    costs no round trip)."""
    if connection.dialect.name == "postgresql":
        given = {**params, "nodes": list(ids), "top": top}
        return list(_STRONGEST.rows(connection, given, *shape, True))
    found = []
    for i, node in enumerate(ids):
        given = {**params, "node": node, "top": top}
        rows = _STRONGEST.rows(connection, given, *shape, False)
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
