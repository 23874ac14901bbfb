"""Breadth-first traversal over believed edges, typed and on both time axes (digest 3.3, 2.8).

Edges are undirected for reachability; a hop distance is the shortest undirected
distance from the start. The result holds every edge whose two ends were both reached.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Final
from uuid import UUID

import msgspec
from sqlalchemy import Connection

from apexmem.domain.recall.activation import Edge
from apexmem.readmodels.entities import names_of
from apexmem.readmodels.facts import facts_of
from apexmem.readmodels.rows import FactRow, Reached, Subgraph

__all__ = [
    "MAX_FRONTIER",
    "MAX_VISITED",
    "Expansion",
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
            edge_id=f.fact_id,
            source=f.subject_id,
            target=f.object_id,
            edge_type=f.edge_type,
            confidence=f.confidence,
            valid_from=f.valid_from,
        )
        for f in facts_of(
            connection,
            ids,
            valid_at=valid_at,
            known_at=known_at,
            edge_types=edge_types,
            edges_only=True,
        )
        if f.object_id is not None
    ]


class Expansion(msgspec.Struct, frozen=True, kw_only=True):
    """What a breadth-first expansion from several seeds reached."""

    reached: dict[UUID, tuple[int, float, UUID]]
    """Entity -> (hops from the nearest seed, that seed's score, that seed)."""
    edges: list[FactRow]
    """Every believed edge walked: both of its ends were reached."""
    cut_short: bool = False


def expand(
    connection: Connection,
    seeds: Mapping[UUID, float],
    *,
    max_hops: int = 2,
    edge_types: Sequence[str] = (),
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    out_of_time: Callable[[], bool] = lambda: False,
) -> Expansion:
    """Breadth-first from every seed at once: each entity gets its shortest distance to a seed.

    Between seeds at the same distance the stronger one counts. The edges of the nodes
    expanded (at most 300 per hop) are the result; `out_of_time` is asked before each hop.
    """
    reached = {s: (0, score, s) for s, score in seeds.items()}
    frontier = sorted(seeds, key=lambda s: (-seeds[s], s))
    edges: dict[tuple[UUID, int], FactRow] = {}
    for hop in range(max_hops):
        if not frontier:
            break
        if out_of_time():
            return Expansion(reached=reached, edges=list(edges.values()), cut_short=True)
        fetched = facts_of(
            connection,
            frontier[:MAX_FRONTIER],
            valid_at=valid_at,
            known_at=known_at,
            edge_types=edge_types,
            edges_only=True,
        )
        arrivals: dict[UUID, tuple[int, float, UUID]] = {}
        for edge in fetched:
            edges[(edge.fact_id, edge.position)] = edge
            for node, other in (
                (edge.subject_id, edge.object_id),
                (edge.object_id, edge.subject_id),
            ):
                if other is None or node not in reached or reached[node][0] != hop:
                    continue
                if other in reached:
                    continue
                _, score, seed = reached[node]
                if other not in arrivals or score > arrivals[other][1]:
                    arrivals[other] = (hop + 1, score, seed)
        reached.update(arrivals)
        frontier = sorted(arrivals, key=lambda n: (-arrivals[n][1], n))
    return Expansion(reached=reached, edges=list(edges.values()))
