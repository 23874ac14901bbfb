"""Breadth-first traversal over believed edges, typed and on both time axes (digest 3.3, 2.8).

Edges are undirected for reachability; a hop distance is the shortest undirected
distance from the start. The result holds every edge whose two ends were both reached.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, NamedTuple
from uuid import UUID

import msgspec
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    String,
    func,
    or_,
    select,
    type_coerce,
)

from apexmem.domain.recall.activation import Edge
from apexmem.events.timeutil import from_micros
from apexmem.readmodels.entities import names_of
from apexmem.readmodels.facts import believed, facts_of
from apexmem.readmodels.rows import Reached, Subgraph
from apexmem.readmodels.tables import facts, retrievals

__all__ = [
    "MAX_FRONTIER",
    "MAX_VISITED",
    "Expansion",
    "Walked",
    "activation_edges",
    "expand",
    "traverse_from",
]

MAX_FRONTIER: Final = 300
"""Nodes expanded per hop at most (the reference's bound)."""
MAX_VISITED: Final = 499
"""Entities in one result at most."""


def traverse_from(
    connection: Connection,
    start: Sequence[UUID],
    *,
    max_hops: int = 2,
    edge_types: Sequence[str] = (),
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
) -> Subgraph:
    """Entities within `max_hops` of `start` over edges of `edge_types` (all when empty)."""
    depth: dict[UUID, int] = dict.fromkeys(start, 0)
    frontier = list(depth)
    for hop in range(max_hops):
        if not frontier:
            break
        edges = facts_of(
            connection,
            frontier[:MAX_FRONTIER],
            valid_at=valid_at,
            known_at=known_at,
            edge_types=edge_types,
            edges_only=True,
        )
        frontier = []
        for edge in edges:
            for node in (edge.subject_id, edge.object_id):
                if node is not None and node not in depth:
                    depth[node] = hop + 1
                    frontier.append(node)
    visited = list(depth)[:MAX_VISITED]
    inside = set(visited)
    edges = [
        e
        for e in facts_of(
            connection,
            visited,
            valid_at=valid_at,
            known_at=known_at,
            edge_types=edge_types,
            edges_only=True,
        )
        if e.subject_id in inside and e.object_id in inside
    ]
    names = names_of(connection, visited)
    reached = [
        Reached(entity_id=e, entity_type=names[e][1], name=names[e][0], hops=depth[e])
        for e in visited
        if e in names
    ]
    reached.sort(key=lambda r: (r.hops, r.name))
    return Subgraph(entities=reached, facts=edges)


def activation_edges(
    connection: Connection,
    ids: Sequence[UUID],
    *,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    edge_types: Sequence[str] = (),
) -> list[Edge]:
    """The believed edges touching `ids`, as spreading activation weighs them."""
    return [
        Edge(
            edge_id=UUID(w.fact_id),
            source=UUID(w.subject_id),
            target=UUID(w.object_id),
            edge_type=w.edge_type,
            confidence=w.confidence,
            retrieval_count=w.retrievals,
            valid_from=from_micros(w.valid_from),
        )
        for w in _walk(
            connection,
            [i.hex for i in ids],
            valid_at=valid_at,
            known_at=known_at,
            edge_types=edge_types,
        )
    ]


class Walked(NamedTuple):
    """A believed edge as the expansion sees it: ids as stored (hex), no names."""

    fact_id: str
    position: int
    subject_id: str
    object_id: str
    edge_type: str
    confidence: float
    retrievals: float
    valid_from: int
    """Microseconds since the epoch."""


class Expansion(msgspec.Struct, frozen=True, kw_only=True):
    """What a breadth-first expansion from several seeds reached (ids as stored: hex)."""

    reached: dict[str, tuple[int, float, str]]
    """Entity -> (hops from the nearest seed, that seed's score, that seed)."""
    edges: list[Walked]
    """Every believed edge walked: both of its ends were reached."""
    cut_short: bool = False


def _raw(column: ColumnElement[Any]) -> ColumnElement[Any]:
    """The column as stored, not converted (ids stay hex strings, times integers)."""
    return type_coerce(column, String)


_WALK: Final = select(
    _raw(facts.c.fact_id),
    facts.c.position,
    _raw(facts.c.subject_id),
    _raw(facts.c.object_id),
    facts.c.edge_type,
    facts.c.confidence,
    func.coalesce(retrievals.c.count, 0.0),
    type_coerce(facts.c.valid_from, BigInteger),
).select_from(facts.outerjoin(retrievals, retrievals.c.fact_id == facts.c.fact_id))


def _walk(
    connection: Connection,
    ids: list[str],
    *,
    valid_at: datetime | None,
    known_at: datetime | None,
    edge_types: Sequence[str],
) -> list[Walked]:
    where = [
        or_(_raw(facts.c.subject_id).in_(ids), _raw(facts.c.object_id).in_(ids)),
        facts.c.object_id.is_not(None),
        *believed(valid_at, known_at, edge_types),
    ]
    return [Walked(*row) for row in connection.execute(_WALK.where(*where))]


def expand(
    connection: Connection,
    seeds: Mapping[UUID, float],
    *,
    max_hops: int = 2,
    edge_types: Sequence[str] = (),
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    frontier_limit: int = MAX_FRONTIER,
    out_of_time: Callable[[], bool] = lambda: False,
) -> Expansion:
    """Breadth-first from every seed at once: each entity gets its shortest distance to a seed.

    Between seeds at the same distance the stronger one counts. The edges of the nodes
    expanded (at most `frontier_limit` per hop, the strongest) are the result; rows stay
    as stored, so a caller converts only the few it keeps. `out_of_time` is asked before
    each hop.
    """
    reached = {s.hex: (0, score, s.hex) for s, score in seeds.items()}
    frontier = sorted(reached, key=lambda s: (-reached[s][1], s))
    edges: dict[tuple[str, int], Walked] = {}
    for hop in range(max_hops):
        if not frontier:
            break
        if out_of_time():
            return Expansion(reached=reached, edges=list(edges.values()), cut_short=True)
        fetched = _walk(
            connection,
            frontier[:frontier_limit],
            valid_at=valid_at,
            known_at=known_at,
            edge_types=edge_types,
        )
        arrivals: dict[str, tuple[int, float, str]] = {}
        for edge in fetched:
            edges[(edge.fact_id, edge.position)] = edge
            for node, other in (
                (edge.subject_id, edge.object_id),
                (edge.object_id, edge.subject_id),
            ):
                if other in reached or reached.get(node, (-1,))[0] != hop:
                    continue
                _, score, seed = reached[node]
                if other not in arrivals or score > arrivals[other][1]:
                    arrivals[other] = (hop + 1, score, seed)
        reached.update(arrivals)
        frontier = sorted(arrivals, key=lambda n: (-arrivals[n][1], n))
    return Expansion(reached=reached, edges=list(edges.values()))
