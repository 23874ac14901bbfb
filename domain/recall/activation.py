"""SYNAPSE spreading activation (digest section 4) over an abstract graph.

The graph comes in as a function from entity ids to the edges touching them, so the
algorithm is pure: no storage, no clock (the caller passes `now` and an `out_of_time`
check for the time budget). Invariants, numbered as in the seeds:

- SA-INV-01 seeds under the activation threshold are dropped; the others are anchors;
- SA-INV-02 spread = score * decay_lambda * evolved_weight * recency * type weight;
- SA-INV-03 lateral inhibition checks both the activation map and this hop's next map;
- SA-INV-04 after each hop at most `max_activated_nodes` nodes are kept (top by score);
- SA-INV-05 recency uses the same formula and rate as `score_with_decay`;
- SA-INV-06 converging paths add up, clamped at 1;
- SA-INV-07 the time budget ends the spread early with what it has, marked as cut short;
- SA-INV-08 an edge-type filter restricts every edge walked, as typed BFS does;
- SA-INV-09 edges are asked for in chunks of at most 490 ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Final, Generic, TypeVar
from uuid import UUID

import msgspec

from apexmem.domain.recall.scoring import EDGE_TYPE_WEIGHTS, evolved_weight, recency_weight
from apexmem.domain.settings import GraphSettings

__all__ = [
    "CHUNK_IDS",
    "Activated",
    "ActivationParams",
    "ActivationResult",
    "Edge",
    "EdgesOf",
    "spread",
]

CHUNK_IDS: Final = 490

Id = TypeVar("Id", UUID, str)
"""How ids are given: UUIDs, or their hex strings as a store holds them (the same order)."""


class Edge(msgspec.Struct, Generic[Id], frozen=True, kw_only=True):
    """A believed edge between two entities, with what the spread weighs it by."""

    edge_id: Id
    source: Id
    target: Id
    edge_type: str
    confidence: float
    retrieval_count: float = 0.0
    valid_from: datetime | None = None


class ActivationParams(msgspec.Struct, frozen=True, kw_only=True):
    """The `[memory.graph.spreading_activation]` numbers the spread needs."""

    decay_lambda: float = 0.85
    max_hops: int = 3
    activation_threshold: float = 0.1
    inhibition_threshold: float = 0.8
    max_activated_nodes: int = 50
    temporal_decay_rate: float = 0.0
    type_weights: Mapping[str, float] = msgspec.field(
        default_factory=lambda: dict(EDGE_TYPE_WEIGHTS)
    )

    @classmethod
    def of(cls, graph: GraphSettings) -> ActivationParams:
        """The numbers the settings give (`[memory.graph]` and its spreading_activation)."""
        chosen = graph.spreading_activation
        return cls(
            decay_lambda=chosen.decay_lambda,
            max_hops=chosen.max_hops,
            activation_threshold=chosen.activation_threshold,
            inhibition_threshold=chosen.inhibition_threshold,
            max_activated_nodes=chosen.max_activated_nodes,
            temporal_decay_rate=graph.temporal_decay_rate,
        )


class Activated(msgspec.Struct, Generic[Id], frozen=True):
    """A node's final activation and the hop at which it last rose."""

    entity_id: Id
    activation: float
    depth: int


class ActivationResult(msgspec.Struct, Generic[Id], frozen=True, kw_only=True):
    """Activated nodes (strongest first) and the edges between active nodes."""

    nodes: list[Activated[Id]]
    facts: list[tuple[Edge[Id], float]]
    """Each edge once, with the higher activation of its two ends, strongest first."""
    cut_short: bool = False


EdgesOf = Callable[[Sequence[Id]], Sequence[Edge[Id]]]
"""The believed edges touching any of these entities."""


def spread(
    seeds: Mapping[Id, float],
    edges_of: EdgesOf[Id],
    params: ActivationParams,
    *,
    now: datetime,
    edge_types: Sequence[str] = (),
    out_of_time: Callable[[], bool] = lambda: False,
) -> ActivationResult[Id]:
    """Spread activation from `seeds` (id -> score) for up to `max_hops` hops."""
    threshold = params.activation_threshold
    activation = {n: (s, 0) for n, s in seeds.items() if s >= threshold}
    found: dict[Id, tuple[Edge[Id], float]] = {}
    graph = _Read(edges_of, params, now, edge_types)
    cut_short = False
    for hop in range(params.max_hops):
        if out_of_time():
            cut_short = True
            break
        active = {n: s for n, (s, _) in activation.items() if s >= threshold}
        if not active:
            break
        edges = graph.touching(list(active))
        following = _next(active, activation, edges, params)
        for node, value in following.items():
            if node not in activation or value > activation[node][0]:
                activation[node] = (value, hop + 1)
        activation = _pruned(activation, params.max_activated_nodes)
        _collect(edges, activation, threshold, found)
    nodes = [Activated(n, s, d) for n, (s, d) in activation.items() if s >= threshold]
    nodes.sort(key=lambda a: (-a.activation, a.depth, a.entity_id))
    facts = sorted(found.values(), key=lambda f: (-f[1], f[0].edge_id))
    return ActivationResult(nodes=nodes, facts=facts, cut_short=cut_short)


_Weighed = tuple[Id, Id, Id, float, Edge[Id]]
"""An edge as a hop walks it: id, source, target, spread weight (SA-INV-02 but the score)."""


class _Read(Generic[Id]):
    """The edges of one spread, each entity's asked for once and each edge weighed once: a
    hop reads only the entities no earlier hop read (an active seed stays active)."""

    def __init__(
        self,
        edges_of: EdgesOf[Id],
        params: ActivationParams,
        now: datetime,
        edge_types: Sequence[str],
    ) -> None:
        self._edges_of: EdgesOf[Id] = edges_of
        self._params = params
        self._now = now
        self._wanted = set(edge_types)
        self._of: dict[Id, dict[Id, _Weighed[Id]]] = {}

    def touching(self, ids: list[Id]) -> list[_Weighed[Id]]:
        """The edges touching any of `ids` (of the types wanted), each once, by edge id."""
        unread = [n for n in ids if n not in self._of]
        for i in range(0, len(unread), CHUNK_IDS):
            self._read(unread[i : i + CHUNK_IDS])
        edges: dict[Id, _Weighed[Id]] = {}
        for node in ids:
            edges.update(self._of[node])
        return [edges[k] for k in sorted(edges)]

    def _read(self, ids: list[Id]) -> None:
        asked: dict[Id, dict[Id, _Weighed[Id]]] = {node: {} for node in ids}
        wanted, weigh = self._wanted, self._weight
        for edge in self._edges_of(ids):
            if wanted and edge.edge_type not in wanted:
                continue
            weighed = (edge.edge_id, edge.source, edge.target, weigh(edge), edge)
            for end in (edge.source, edge.target):
                if end in asked:
                    asked[end][edge.edge_id] = weighed
        self._of.update(asked)

    def _weight(self, edge: Edge[Id]) -> float:
        params = self._params
        return (
            params.decay_lambda
            * evolved_weight(edge.retrieval_count, edge.confidence)
            * recency_weight(edge.valid_from, self._now, params.temporal_decay_rate)
            * params.type_weights.get(edge.edge_type, 1.0)
        )


def _next(
    active: dict[Id, float],
    activation: dict[Id, tuple[float, int]],
    edges: list[_Weighed[Id]],
    params: ActivationParams,
) -> dict[Id, float]:
    """What this hop gives each neighbour, the edges taken in edge-id order (SA-INV-03, 06)."""
    following: dict[Id, float] = {}
    inhibition = params.inhibition_threshold
    threshold = params.activation_threshold
    inhibited = {n for n, (s, _) in activation.items() if s >= inhibition}
    given = following.get
    for _, source, target, weight, _ in edges:
        if source == target:
            continue
        for node, neighbour in ((source, target), (target, source)):
            score = active.get(node)
            if score is None or neighbour in inhibited:
                continue
            before = given(neighbour, 0.0)
            if before >= inhibition:
                continue
            amount = score * weight
            if amount < threshold:
                continue
            following[neighbour] = min(before + amount, 1.0)
    return following


def _pruned(activation: dict[Id, tuple[float, int]], limit: int) -> dict[Id, tuple[float, int]]:
    if len(activation) <= limit:
        return activation
    ranked = sorted(activation.items(), key=lambda item: (-item[1][0], item[1][1], item[0]))
    return dict(ranked[:limit])


def _collect(
    edges: list[_Weighed[Id]],
    activation: dict[Id, tuple[float, int]],
    threshold: float,
    found: dict[Id, tuple[Edge[Id], float]],
) -> None:
    active = {n: s for n, (s, _) in activation.items() if s >= threshold}
    for edge_id, source, target, _, edge in edges:
        if source in active and target in active:
            score = max(active[source], active[target])
            if edge_id not in found or score > found[edge_id][1]:
                found[edge_id] = (edge, score)
