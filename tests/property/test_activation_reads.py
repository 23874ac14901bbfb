"""Spreading activation reads each entity's edges once and weighs each edge once per spread,
and returns exactly what the plain spread returns.

The plain spread below is the algorithm as it was written before the reads were cut (every
hop asked for the edges of all its active entities and weighed each edge again): over
random graphs with hubs, parallel edges, self loops, tied confidences and tied seeds, the
spread returns the same nodes (same order, depths and activations to the last bit) and the
same facts, and never asks for an entity's edges twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem.domain.recall.activation import (
    CHUNK_IDS,
    Activated,
    ActivationParams,
    ActivationResult,
    Edge,
    EdgesOf,
    spread,
)
from apexmem.domain.recall.scoring import evolved_weight, recency_weight

NOW = datetime(2025, 7, 1, tzinfo=UTC)
TYPES = ("causal", "semantic", "temporal", "entity", "other")


def plain_spread(
    seeds: dict[str, float],
    edges_of: EdgesOf[str],
    params: ActivationParams,
    *,
    now: datetime,
    edge_types: Sequence[str] = (),
    out_of_time: Callable[[], bool] = lambda: False,
) -> ActivationResult[str]:
    """The spread before its reads were cut: every hop reads and weighs every edge again."""
    threshold = params.activation_threshold
    activation = {n: (s, 0) for n, s in seeds.items() if s >= threshold}
    found: dict[str, tuple[Edge[str], float]] = {}
    cut_short = False
    for hop in range(params.max_hops):
        if out_of_time():
            cut_short = True
            break
        active = {n: s for n, (s, _) in activation.items() if s >= threshold}
        if not active:
            break
        edges = _plain_edges(edges_of, list(active), edge_types)
        following = _plain_next(active, activation, edges, params, now)
        for node, value in following.items():
            if node not in activation or value > activation[node][0]:
                activation[node] = (value, hop + 1)
        if len(activation) > params.max_activated_nodes:
            ranked = sorted(activation.items(), key=lambda i: (-i[1][0], i[1][1], i[0]))
            activation = dict(ranked[: params.max_activated_nodes])
        for edge in edges:
            source = activation.get(edge.source, (0.0, 0))[0]
            target = activation.get(edge.target, (0.0, 0))[0]
            if source >= threshold and target >= threshold:
                score = max(source, target)
                if edge.edge_id not in found or score > found[edge.edge_id][1]:
                    found[edge.edge_id] = (edge, score)
    nodes = [Activated(n, s, d) for n, (s, d) in activation.items() if s >= threshold]
    nodes.sort(key=lambda a: (-a.activation, a.depth, a.entity_id))
    facts = sorted(found.values(), key=lambda f: (-f[1], f[0].edge_id))
    return ActivationResult(nodes=nodes, facts=facts, cut_short=cut_short)


def _plain_edges(
    edges_of: EdgesOf[str], ids: list[str], edge_types: Sequence[str]
) -> list[Edge[str]]:
    wanted = set(edge_types)
    read: dict[str, Edge[str]] = {}
    for i in range(0, len(ids), CHUNK_IDS):
        for edge in edges_of(ids[i : i + CHUNK_IDS]):
            if not wanted or edge.edge_type in wanted:
                read[edge.edge_id] = edge
    return [read[k] for k in sorted(read)]


def _plain_next(
    active: dict[str, float],
    activation: dict[str, tuple[float, int]],
    edges: list[Edge[str]],
    params: ActivationParams,
    now: datetime,
) -> dict[str, float]:
    following: dict[str, float] = {}
    inhibition = params.inhibition_threshold
    for edge in edges:
        weight = (
            params.decay_lambda
            * evolved_weight(edge.retrieval_count, edge.confidence)
            * recency_weight(edge.valid_from, now, params.temporal_decay_rate)
            * params.type_weights.get(edge.edge_type, 1.0)
        )
        for node, neighbour in ((edge.source, edge.target), (edge.target, edge.source)):
            if node not in active or node == neighbour:
                continue
            if activation.get(neighbour, (0.0, 0))[0] >= inhibition:
                continue
            if following.get(neighbour, 0.0) >= inhibition:
                continue
            amount = active[node] * weight
            if amount < params.activation_threshold:
                continue
            following[neighbour] = min(following.get(neighbour, 0.0) + amount, 1.0)
    return following


class Graph:
    """The edges touching the ids asked for, in the order given; every id asked remembered."""

    def __init__(self, edges: list[Edge[str]]) -> None:
        self.edges = edges
        self.asked: list[str] = []

    def __call__(self, ids: Sequence[str]) -> list[Edge[str]]:
        self.asked += ids
        wanted = set(ids)
        return [e for e in self.edges if e.source in wanted or e.target in wanted]


node_names = st.integers(0, 9).map(lambda i: f"n{i:02d}")
edge_rows = st.tuples(
    node_names,
    node_names,
    st.sampled_from(TYPES),
    st.sampled_from((0.05, 0.3, 0.5, 0.8, 1.0)),
    st.sampled_from((0.0, 0.0, 0.0, 1.0, 3.0, 40.0, -2.0)),
    st.one_of(st.none(), st.integers(-400, 30).map(lambda d: NOW + timedelta(days=d))),
)


@st.composite
def graphs(draw: st.DrawFn) -> list[Edge[str]]:
    """Random edges, with a few hubs each joined to many nodes (parallel edges and self
    loops allowed), in an arbitrary order."""
    rows = draw(st.lists(edge_rows, min_size=5, max_size=80))
    for hub in draw(st.lists(node_names, min_size=1, max_size=3)):
        fan = draw(st.lists(edge_rows, min_size=5, max_size=40))
        rows += [
            (hub, other, *rest) if i % 2 else (other, hub, *rest)
            for i, (other, _, *rest) in enumerate(fan)
        ]
    edges = [
        Edge(
            edge_id=f"e{i:04d}",
            source=a,
            target=b,
            edge_type=kind,
            confidence=confidence,
            retrieval_count=count,
            valid_from=since,
        )
        for i, (a, b, kind, confidence, count, since) in enumerate(rows)
    ]
    return draw(st.permutations(edges))


settings_drawn = st.builds(
    ActivationParams,
    decay_lambda=st.sampled_from((0.85, 0.5, 1.0)),
    max_hops=st.integers(1, 4),
    activation_threshold=st.sampled_from((0.1, 0.05, 0.3)),
    inhibition_threshold=st.sampled_from((0.8, 0.5, 1.0)),
    max_activated_nodes=st.sampled_from((50, 8, 3)),
    temporal_decay_rate=st.sampled_from((0.0, 0.01)),
)


@settings(max_examples=300)  # pure and fast; orders that matter are rare in small graphs
@given(
    graphs(),
    st.dictionaries(
        node_names, st.sampled_from((1.0, 0.9, 0.5, 0.2, 0.05)), min_size=1, max_size=8
    ),
    settings_drawn,
    st.lists(st.sampled_from(TYPES), max_size=3),
    st.integers(0, 5),
)
def test_the_spread_returns_what_the_plain_spread_returns_reading_each_entity_once(
    edges: list[Edge[str]],
    seeds: dict[str, float],
    params: ActivationParams,
    edge_types: list[str],
    hops_in_time: int,
) -> None:
    graph, plain_graph = Graph(edges), Graph(edges)
    clock, plain_clock = iter(range(100)), iter(range(100))

    got = spread(
        seeds,
        graph,
        params,
        now=NOW,
        edge_types=edge_types,
        out_of_time=lambda: next(clock) >= hops_in_time,
    )
    expected = plain_spread(
        seeds,
        plain_graph,
        params,
        now=NOW,
        edge_types=edge_types,
        out_of_time=lambda: next(plain_clock) >= hops_in_time,
    )

    assert got.nodes == expected.nodes
    assert [(e, s) for e, s in got.facts] == [(e, s) for e, s in expected.facts]
    assert got.cut_short == expected.cut_short
    assert len(graph.asked) == len(set(graph.asked))
    assert set(graph.asked) <= set(plain_graph.asked)
