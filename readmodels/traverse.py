"""Breadth-first traversal over believed edges, typed and on both time axes (digest 3.3, 2.8).

Edges are undirected for reachability; a hop distance is the shortest undirected
distance from the start. The result holds every edge whose two ends were both reached.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NamedTuple
from uuid import UUID

import msgspec
from sqlalchemy import BindParameter, ClauseElement, Connection, bindparam, or_, select

from apexmem.domain.recall.prism import cheapest_first
from apexmem.readmodels.entities import names_of
from apexmem.readmodels.facts import facts_of, prepared_believed
from apexmem.readmodels.moment import EVERY_FACT, Lens
from apexmem.readmodels.prepared import Prepared, as_stored
from apexmem.readmodels.rows import Reached, Subgraph
from apexmem.readmodels.strongest import (
    MAX_ENTITIES,
    retrieved_edges,
    strongest_edges,
    walk_columns,
)
from apexmem.readmodels.tables import facts, retrievals

__all__ = [
    "MAX_FRONTIER",
    "MAX_VISITED",
    "Costs",
    "EdgeScore",
    "Expansion",
    "Scored",
    "Walked",
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
    lens: Lens = EVERY_FACT,
) -> Subgraph:
    """Entities within `max_hops` of `start` over the edges `lens` sees."""
    depth: dict[UUID, int] = dict.fromkeys(start, 0)
    frontier = list(depth)
    for hop in range(max_hops):
        if not frontier:
            break
        edges = facts_of(connection, frontier[:MAX_FRONTIER], lens=lens, edges_only=True)
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
        for e in facts_of(connection, visited, lens=lens, edges_only=True)
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
    """As asserted or last reinforced (`ConfidenceNow` decays it to a moment)."""
    retrievals: float
    valid_from: int
    """Microseconds since the epoch."""
    observed_at: int
    """Microseconds since the epoch: when it was last observed (its decay starts there)."""


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
    expanded: list[str] = msgspec.field(default_factory=list)
    """The entities expanded, hop by hop, in the order each hop took them."""


def _walk_statement(valid: bool, known: bool, typed: bool, fading: bool) -> ClauseElement:
    ids: BindParameter[Any] = bindparam("ids", expanding=True)
    return (
        select(*walk_columns())
        .select_from(facts.outerjoin(retrievals, retrievals.c.fact_id == facts.c.fact_id))
        .where(
            or_(as_stored(facts.c.subject_id).in_(ids), as_stored(facts.c.object_id).in_(ids)),
            facts.c.object_id.is_not(None),
            *prepared_believed(valid, known, typed, fading),
        )
    )


_WALK: Final = Prepared(_walk_statement, keyed=True)
"""Prepared on the PostgreSQL server: a bitmap of both ends' walk indexes is the plan for any
entities (planning took about as long as running it, ~0.35 ms a walk at 1,000,000 facts)."""


class _Reader:
    """The walk's statements, with the state and the edge types one expansion asks for."""

    def __init__(self, connection: Connection, lens: Lens) -> None:
        self.connection = connection
        self.params: dict[str, Any] = lens.params()
        valid, known, typed, fading = lens.shape()
        self.current = not known
        self.shape = (valid, typed, fading)

    def walk(self, ids: list[str]) -> list[Walked]:
        """Every believed edge touching `ids`."""
        valid, typed, fading = self.shape
        shape = (valid, not self.current, typed, fading)
        rows = _WALK.rows(self.connection, {**self.params, "ids": ids}, *shape)
        return [Walked(*row) for row in rows]

    def strongest(self, ids: list[str], top: int) -> list[tuple[int, Walked]]:
        """The `top` most confident edges of each side of each of `ids`, by side."""
        rows = strongest_edges(self.connection, ids, top=top, params=self.params, shape=self.shape)
        return [(row[0], Walked(*row[1:])) for row in rows]

    def retrieved(self, subjects: list[str], objects: list[str]) -> list[Walked]:
        """The edges with a retrieval count of these subjects and objects."""
        rows = retrieved_edges(
            self.connection, subjects, objects, params=self.params, shape=self.shape
        )
        return [Walked(*row) for row in rows]


EdgeScore = Callable[[Walked, int, float], float]
"""The score of an edge reached `hop` hops from a seed matched with `match` (the arguments)."""
Costs = Callable[[Mapping[str, float]], Mapping[str, float]]
"""The cost of expanding each entity, given the confidence of the edge it was reached over
(a seed's: its match): cheapest first (`domain.recall.prism`)."""


def expand(
    connection: Connection,
    seeds: Mapping[UUID, float],
    *,
    score: EdgeScore,
    keep: int,
    ceiling: float = math.inf,
    max_hops: int = 2,
    lens: Lens = EVERY_FACT,
    frontier_limit: int = MAX_FRONTIER,
    out_of_time: Callable[[], bool] = lambda: False,
    evolved: bool = False,
    costs: Costs | None = None,
) -> Expansion:
    """Breadth-first from every seed at once: the best `keep` edges by `score`.

    Each entity gets its shortest distance to a seed (between seeds at the same distance
    the stronger counts, then the smaller id); an edge is scored from its end that gives it
    the most, `match / (1 + hop)`. At most `frontier_limit` entities are expanded per hop,
    the strongest, and only those whose edges could still enter the best `keep`: `ceiling`
    is the most `score` multiplies `match / (1 + hop)` by, so an entity whose bound is
    below the `keep`-th score found is not walked (nor anything beyond it); its bound
    counts the far end of its edges too, which may be reached from a stronger seed. Rows
    stay as stored, so a caller converts only the few it keeps. `out_of_time` is asked
    before each hop. Only the edges `lens` sees are walked.

    `evolved` says that `score` is at most `match / (1 + hop) * min(1, confidence) *
    ceiling` for an edge without a retrieval count (the recall's composite score). Then
    the last hop in the present state reads each entity's edges most confident first, a
    few per side, and the rest of an entity only when its bound could still enter the
    best `keep`: the same edges are kept, but `reached` holds only the last hop's entities
    reached over the edges read.

    `costs` orders each hop's entities, cheapest first (PRISM), once they are chosen as
    without it: it changes the order they are expanded in (`expanded`), never which ones
    are, nor the edges kept.
    """
    reader = _Reader(connection, lens)
    reached = {s.hex: (0, match, s.hex) for s, match in seeds.items()}
    frontier = sorted(reached, key=lambda s: (-reached[s][1], s))
    state = _State(reached=reached, keep=keep, ceiling=ceiling, score=score)
    state.over = None if costs is None else {s: m for s, (_, m, _) in reached.items()}
    expanded: list[str] = []
    strongest = max(seeds.values(), default=0.0)
    for hop in range(max_hops):
        if len(state.best) >= keep > 0:
            floor = state.best[keep - 1].score
            # An edge of an entity `hop` hops out scores from its end that gives it the most:
            # that entity (its match / (1 + hop)), or an entity farther out, reached from
            # any seed (at most the strongest seed's match / (2 + hop)). Only when neither
            # can reach the floor is the entity left (an entity whose bound equals the
            # floor stays: a tie goes to the smaller fact id).
            farther = strongest / (2 + hop)
            frontier = [
                n for n in frontier if max(reached[n][1] / (1 + hop), farther) * ceiling >= floor
            ]
        if not frontier:
            break
        if out_of_time():
            best = state.best[:keep]
            return Expansion(reached=reached, edges=best, cut_short=True, expanded=expanded)
        ids = frontier[:frontier_limit]
        if costs is not None and state.over is not None:
            ids = cheapest_first(ids, costs({n: state.over[n] for n in ids}))
        expanded += ids
        ranked = evolved and hop == max_hops - 1 and reader.current
        if ranked and keep > 0 and math.isfinite(ceiling) and len(ids) <= MAX_ENTITIES:
            arrivals = state.last_hop(reader, ids, hop)
        else:
            arrivals = state.hop(reader.walk(ids), ids, hop)
        frontier = sorted(arrivals, key=lambda n: (-arrivals[n][1], n))
    return Expansion(reached=reached, edges=state.best, expanded=expanded)


_Reach = tuple[int, float, str]
"""An entity reached: hops from its seed, the seed's match, the seed (ids as stored)."""
_TOP: Final = 32
"""Edges per side of an entity the last hop reads first, and at least `_TOP_PER_KEPT`
times `keep`: enough that the rest of a busy entity is seldom read."""
_TOP_PER_KEPT: Final = 3


class _State:
    """An expansion under way: the entities reached, the edges walked, the best kept."""

    def __init__(self, *, reached: dict[str, _Reach], keep: int, ceiling: float, score: EdgeScore):
        self.reached = reached
        self.keep, self.ceiling, self.score = keep, ceiling, score
        self.walked: set[tuple[str, int]] = set()
        self.expanded: set[str] = set()
        self.best: list[Scored] = []
        self.over: dict[str, float] | None = None
        """Each entity reached -> the confidence of the strongest edge it was first reached
        over (a seed's: its match), when the expansion orders by cost."""

    def hop(self, edges: list[Walked], ids: list[str], hop: int) -> dict[str, _Reach]:
        """Take in every edge touching `ids` (the entities expanded at `hop`); the arrivals."""
        fetched = list(self._fresh(edges, {}).values())
        arrivals = _arrivals(fetched, self.reached, hop)
        self.reached.update(arrivals)
        self.best = self._kept(fetched, self.reached)
        self._done(fetched, ids, arrivals, hop)
        return arrivals

    def last_hop(self, reader: _Reader, ids: list[str], hop: int) -> dict[str, _Reach]:
        """`hop` over the strongest edges of `ids` first, then the rest of any entity whose
        remaining edges could still enter the best `keep`; the arrivals."""
        top = max(_TOP, _TOP_PER_KEPT * self.keep)
        inside = set(ids)
        fetched: dict[tuple[str, int], Walked] = {}
        counts: dict[int, int] = {}
        least: dict[int, float] = {}  # a side's least confidence read
        strongest = reader.strongest(ids, top)
        for side, edge in strongest:
            counts[side] = counts.get(side, 0) + 1
            least[side] = min(least.get(side, math.inf), edge.confidence)
        self._fresh([edge for _, edge in strongest], fetched)
        # An entity with a side not read whole: the most its unread edges' confidence can be.
        unread: dict[str, float] = {}
        for side in (s for s, n in counts.items() if n >= top):
            node = ids[side // 2]
            unread[node] = max(unread.get(node, -math.inf), least[side])
        if unread:
            subjects = [ids[s // 2] for s, n in counts.items() if n >= top and s % 2 == 0]
            objects = [ids[s // 2] for s, n in counts.items() if n >= top and s % 2 == 1]
            found = reader.retrieved(subjects, objects)
            self._fresh(
                [e for e in found if e.subject_id in inside or e.object_id in inside], fetched
            )
        while True:
            edges = list(fetched.values())
            arrivals = _arrivals(edges, self.reached, hop)
            now = {**self.reached, **arrivals}
            best = self._kept(edges, now)
            if not unread or self._settled(best, unread, ids, hop):
                break
            self._fresh(reader.walk(list(unread)), fetched)
            unread = {}
        self.reached.update(arrivals)
        self.best = best
        self._done(edges, ids, arrivals, hop)
        return arrivals

    def _settled(
        self, best: list[Scored], unread: dict[str, float], ids: list[str], hop: int
    ) -> bool:
        """Whether no edge left unread of the entities in `unread` can enter `best`."""
        if len(best) < self.keep:
            return False
        floor, ceiling = best[-1].score, self.ceiling
        strongest = max(self.reached[n][1] for n in ids)
        # An unread edge may also raise an entity this hop reaches to a stronger seed's match.
        if max(self.reached[n][1] for n in unread) / (hop + 2) * ceiling >= floor:
            return False
        # The most either end of an unread edge can give: an entity reached and not expanded
        # (this hop's included), or one this hop reaches.
        most = max(
            [strongest / (hop + 2)]
            + [m / (1 + h) for n, (h, m, _) in self.reached.items() if n not in self.expanded]
        )
        return all(floor > most * min(1.0, least) * ceiling for least in unread.values())

    def _kept(self, edges: list[Walked], reached: dict[str, _Reach]) -> list[Scored]:
        """The best `keep` of those kept so far and `edges` (both ends reached), best first."""
        keep, ceiling = self.keep, self.ceiling
        if keep <= 0:
            return []
        pool = list(self.best)
        floor = pool[keep - 1].score if len(pool) >= keep else -math.inf
        for edge in edges:
            at_subject, at_object = reached[edge[2]], reached[edge[4]]
            by_subject = at_subject[1] / (1 + at_subject[0])
            by_object = at_object[1] / (1 + at_object[0])
            if by_object > by_subject or (by_object == by_subject and at_object[0] < at_subject[0]):
                end, most = at_object, by_object
            else:
                end, most = at_subject, by_subject
            if most * ceiling < floor:
                continue
            found = self.score(edge, end[0], end[1])
            if found < floor:
                continue
            pool.append(Scored(found, edge, end[0], end[2]))
            if len(pool) >= 4 * keep + 64:  # cut now and then: a raised floor skips more
                pool.sort(key=_rank)
                del pool[keep:]
                floor = pool[-1].score
        pool.sort(key=_rank)
        del pool[keep:]
        return pool

    def _fresh(
        self, edges: list[Walked], into: dict[tuple[str, int], Walked]
    ) -> dict[tuple[str, int], Walked]:
        for edge in edges:
            key = (edge.fact_id, edge.position)
            if key not in self.walked and key not in into:
                into[key] = edge
        return into

    def _done(
        self, edges: list[Walked], ids: list[str], arrivals: dict[str, _Reach], hop: int
    ) -> None:
        self.walked.update((e.fact_id, e.position) for e in edges)
        self.expanded.update(ids)
        if self.over is None:
            return
        for edge in edges:
            ends = ((edge.subject_id, edge.object_id), (edge.object_id, edge.subject_id))
            for node, other in ends:
                at = self.reached.get(other)
                if node in arrivals and at is not None and at[0] == hop:
                    self.over[node] = max(self.over.get(node, 0.0), edge.confidence)


def _arrivals(edges: list[Walked], reached: dict[str, _Reach], hop: int) -> dict[str, _Reach]:
    """The entities first reached over `edges` from those `hop` hops out, each from its
    strongest neighbour's seed (the smaller seed id between equals)."""
    arrivals: dict[str, _Reach] = {}
    get = reached.get
    for edge in edges:
        subject, object_ = edge[2], edge[4]
        at_subject, at_object = get(subject), get(object_)
        if at_subject is None:
            if at_object is None or at_object[0] != hop:
                continue
            node, end = subject, at_object
        elif at_object is None and at_subject[0] == hop:
            node, end = object_, at_subject
        else:
            continue
        known = arrivals.get(node)
        if known is None or end[1] > known[1] or (end[1] == known[1] and end[2] < known[2]):
            arrivals[node] = (hop + 1, end[1], end[2])
    return arrivals


def _rank(kept: Scored) -> tuple[float, str]:
    return (-kept.score, kept.edge.fact_id)
