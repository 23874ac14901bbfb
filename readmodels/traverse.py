"""Breadth-first traversal over believed edges, typed and on both time axes (digest 3.3, 2.8).

Edges are undirected for reachability; a hop distance is the shortest undirected
distance from the start. The result holds every edge whose two ends were both reached.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, NamedTuple
from uuid import UUID

import msgspec
from sqlalchemy import BindParameter, ClauseElement, Connection, bindparam, func, or_, select

from apexmem.domain.recall.activation import Edge
from apexmem.events.timeutil import from_micros
from apexmem.readmodels.decay import Fading
from apexmem.readmodels.entities import names_of
from apexmem.readmodels.facts import facts_of, prepared_believed
from apexmem.readmodels.prepared import Prepared, as_stored, stored_time, stored_times
from apexmem.readmodels.recall import fact_key_columns
from apexmem.readmodels.rows import Reached, Subgraph
from apexmem.readmodels.tables import facts, retrievals

__all__ = [
    "MAX_FRONTIER",
    "MAX_VISITED",
    "EdgeScore",
    "Expansion",
    "Scored",
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
    fading: Fading | None = None,
) -> Subgraph:
    """Entities within `max_hops` of `start` over edges of `edge_types` (all when empty),
    faded ones left out when `fading` is given."""
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
            fading=fading,
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
            fading=fading,
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
    ids: Sequence[str],
    *,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    edge_types: Sequence[str] = (),
    fading: Fading | None = None,
) -> list[Edge[str]]:
    """The believed edges touching `ids`, as spreading activation weighs them (ids as stored:
    hex, converted by no one: a spread walks thousands of them); faded ones left out when
    `fading` is given."""
    return [
        Edge(
            edge_id=w.fact_id,
            source=w.subject_id,
            target=w.object_id,
            edge_type=w.edge_type,
            confidence=w.confidence,
            retrieval_count=w.retrievals,
            valid_from=from_micros(w.valid_from),
        )
        for w in _walk(
            connection,
            list(ids),
            valid_at=valid_at,
            known_at=known_at,
            edge_types=edge_types,
            fading=fading,
        )
    ]


class Walked(NamedTuple):
    """A believed edge as the expansion sees it: a `FactKey` (ids as stored: hex) and what
    scores it."""

    fact_id: str
    position: int
    subject_id: str
    relation: str
    object_id: str
    said: str | None
    edge_type: str
    episode: str | None
    ref: str | None
    confidence: float
    retrievals: float
    valid_from: int
    """Microseconds since the epoch."""


class Scored(NamedTuple):
    """An edge an expansion kept: its score, and the seed it was reached from, how far."""

    score: float
    edge: Walked
    hop: int
    seed: str
    """The seed's id as stored (hex)."""


class Expansion(msgspec.Struct, frozen=True, kw_only=True):
    """What a breadth-first expansion from several seeds reached (ids as stored: hex)."""

    reached: dict[str, tuple[int, float, str]]
    """Entity -> (hops from the nearest seed, that seed's score, that seed)."""
    edges: list[Scored]
    """The best-scored edges walked (both ends reached), best first."""
    cut_short: bool = False


def _walk_statement(valid: bool, known: bool, typed: bool, fading: bool) -> ClauseElement:
    ids: BindParameter[Any] = bindparam("ids", expanding=True)
    return (
        select(
            *fact_key_columns(),
            facts.c.confidence,
            func.coalesce(retrievals.c.count, 0.0),
            stored_time(facts.c.valid_from),
        )
        .select_from(facts.outerjoin(retrievals, retrievals.c.fact_id == facts.c.fact_id))
        .where(
            or_(as_stored(facts.c.subject_id).in_(ids), as_stored(facts.c.object_id).in_(ids)),
            facts.c.object_id.is_not(None),
            *prepared_believed(valid, known, typed, fading),
        )
    )


_WALK: Final = Prepared(_walk_statement)


def _walk(
    connection: Connection,
    ids: list[str],
    *,
    valid_at: datetime | None,
    known_at: datetime | None,
    edge_types: Sequence[str],
    fading: Fading | None = None,
) -> list[Walked]:
    params = {**stored_times(valid_at, known_at), "edge_types": list(edge_types), "ids": ids}
    if fading is not None:
        params.update(fading.params())
    shape = (valid_at is not None, known_at is not None, bool(edge_types), fading is not None)
    return [Walked(*row) for row in _WALK.rows(connection, params, *shape)]


EdgeScore = Callable[[Walked, int, float], float]
"""The score of an edge reached `hop` hops from a seed matched with `match` (the arguments)."""


def expand(
    connection: Connection,
    seeds: Mapping[UUID, float],
    *,
    score: EdgeScore,
    keep: int,
    ceiling: float = math.inf,
    max_hops: int = 2,
    edge_types: Sequence[str] = (),
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    frontier_limit: int = MAX_FRONTIER,
    out_of_time: Callable[[], bool] = lambda: False,
    fading: Fading | None = None,
) -> Expansion:
    """Breadth-first from every seed at once: the best `keep` edges by `score`.

    Each entity gets its shortest distance to a seed (between seeds at the same distance
    the stronger counts); an edge is scored from its end that gives it the most,
    `match / (1 + hop)`. At most `frontier_limit` entities are expanded per hop, the
    strongest, and only those whose edges could still enter the best `keep`: `ceiling` is
    the most `score` multiplies `match / (1 + hop)` by, so an entity whose bound is no
    better than the `keep`-th score found is not walked (nor anything beyond it). Rows
    stay as stored, so a caller converts only the few it keeps. `out_of_time` is asked
    before each hop. Faded edges are not walked when `fading` is given.
    """
    reached = {s.hex: (0, match, s.hex) for s, match in seeds.items()}
    frontier = sorted(reached, key=lambda s: (-reached[s][1], s))
    walked: set[tuple[str, int]] = set()
    best: list[Scored] = []
    for hop in range(max_hops):
        if len(best) >= keep > 0:
            floor = best[keep - 1].score
            frontier = [n for n in frontier if reached[n][1] / (1 + hop) * ceiling > floor]
        if not frontier:
            break
        if out_of_time():
            return Expansion(reached=reached, edges=best[:keep], cut_short=True)
        fetched = [
            edge
            for edge in _walk(
                connection,
                frontier[:frontier_limit],
                valid_at=valid_at,
                known_at=known_at,
                edge_types=edge_types,
                fading=fading,
            )
            if (edge.fact_id, edge.position) not in walked
        ]
        arrivals: dict[str, tuple[int, float, str]] = {}
        for edge in fetched:
            walked.add((edge.fact_id, edge.position))
            for node, other in (
                (edge.subject_id, edge.object_id),
                (edge.object_id, edge.subject_id),
            ):
                if other in reached or reached.get(node, (-1,))[0] != hop:
                    continue
                _, match, seed = reached[node]
                if other not in arrivals or match > arrivals[other][1]:
                    arrivals[other] = (hop + 1, match, seed)
        reached.update(arrivals)
        for edge in fetched:  # both ends are reached now: the score is final
            ends = (reached[edge.subject_id], reached[edge.object_id])
            near, match, seed = max(ends, key=lambda end: (end[1] / (1 + end[0]), -end[0]))
            best.append(Scored(score(edge, near, match), edge, near, seed))
        best.sort(key=lambda s: (-s.score, s.edge.fact_id))
        del best[max(keep, 0) :]
        frontier = sorted(arrivals, key=lambda n: (-arrivals[n][1], n))
    return Expansion(reached=reached, edges=best)
