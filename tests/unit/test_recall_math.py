"""Recall math from the digest: scoring (section 7 items 2-4), the router (item 25), SYNAPSE
spreading activation (section 4 traces, item 19, SA-INV-01..09) and rank fusion.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid5

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apexmem.domain.identities import NS
from apexmem.domain.recall import (
    ActivationParams,
    Edge,
    classify_edge_types,
    clean_line,
    composite_score,
    decayed_confidence,
    dedupe,
    evolved_weight,
    format_lines,
    reciprocal_rank_fusion,
    score_with_decay,
    spread,
)
from apexmem.domain.recall.activation import CHUNK_IDS
from apexmem.domain.settings import GraphSettings

NOW = datetime(2025, 7, 1, tzinfo=UTC)


def node(name: str) -> UUID:
    """A stable id per test node name."""
    return uuid5(NS, f"test-node/{name}")


def link(a: str, b: str, **extra: object) -> Edge[UUID]:
    """An edge a -> b (semantic, confidence 1 unless given)."""
    fields: dict[str, object] = {"edge_type": "semantic", "confidence": 1.0, **extra}
    return Edge(edge_id=uuid5(NS, f"test-edge/{a}/{b}"), source=node(a), target=node(b), **fields)  # type: ignore[arg-type]


class Graph:
    """A fake graph: the edges touching any of the asked ids, and every call remembered."""

    def __init__(self, edges: Sequence[Edge[UUID]]) -> None:
        self.edges = list(edges)
        self.calls: list[int] = []

    def __call__(self, ids: Sequence[UUID]) -> list[Edge[UUID]]:
        self.calls.append(len(ids))
        wanted = set(ids)
        return [e for e in self.edges if e.source in wanted or e.target in wanted]


def scores(
    edges: Sequence[Edge[UUID]], params: ActivationParams, **options: object
) -> dict[str, float]:
    """Activation by node name after spreading from A at 1.0."""
    names = {node(n): n for e in edges for n in _names(e)} | {node("A"): "A"}
    result = spread({node("A"): 1.0}, Graph(edges), params, now=NOW, **options)  # type: ignore[arg-type]
    return {names[a.entity_id]: round(a.activation, 6) for a in result.nodes}


def _names(edge: Edge[UUID]) -> list[str]:
    return [n for n in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if node(n) in (edge.source, edge.target)]


# Scoring (items 2-4) ---------------------------------------------------------------------------


def test_evolved_weight_matches_the_reference_values() -> None:
    assert evolved_weight(0, 0.8) == 0.8
    assert evolved_weight(1000, 0.9) == 1.0
    assert evolved_weight(10, 0.5) > evolved_weight(1, 0.5) > 0.5
    assert evolved_weight(-5, 0.7) == evolved_weight(0, 0.7)
    assert math.isclose(evolved_weight(1, 0.5), 0.569315, abs_tol=1e-6)
    assert math.isclose(evolved_weight(10, 0.5), 0.739790, abs_tol=1e-6)
    assert math.isclose(evolved_weight(5, 0.7), 0.950846, abs_tol=1e-6)


def test_composite_score_weighs_match_hops_confidence_and_edge_type() -> None:
    assert composite_score(1.0, 0, 1.0, "semantic") == 1.0
    assert math.isclose(composite_score(0.9, 1, 0.8, "semantic"), 0.36)
    assert [composite_score(1.0, 0, 1.0, t) for t in ("causal", "temporal", "entity")] == [
        1.2,
        0.9,
        0.8,
    ]
    assert composite_score(1.0, 0, 0.5, "semantic", retrieval_count=5) > 0


def test_recency_boost_is_additive_and_capped_at_twice_the_base() -> None:
    base = composite_score(1.0, 0, 1.0, "semantic")
    future = datetime(2026, 1, 1, tzinfo=UTC)

    assert score_with_decay(base, future, NOW, 0.0) == base
    assert score_with_decay(base, future, NOW, 0.01) == 2 * base
    assert base < score_with_decay(base, NOW - timedelta(days=400), NOW, 0.01) < 2 * base
    assert score_with_decay(base, None, NOW, 0.01) == base


def test_confidence_decays_exponentially_with_days_since_observed() -> None:
    assert decayed_confidence(0.9, 0, 0.01) == 0.9
    assert math.isclose(decayed_confidence(1.0, 100, 0.01), math.exp(-1))
    assert decayed_confidence(0.8, -3, 0.01) == 0.8


# Router (item 25, DESIGN 6.3) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("why did the build fail", ["causal", "semantic"]),
        ("hello", ["semantic"]),
        ("what happened before the release", ["temporal", "semantic"]),
        ("when did Alice join", ["temporal", "semantic"]),
        ("Rust is a language", ["entity", "semantic"]),
        ("because it was part of the plan, then", ["causal", "temporal", "entity", "semantic"]),
    ],
)
def test_the_router_maps_keywords_to_subgraphs_semantic_last(
    query: str, expected: list[str]
) -> None:
    assert classify_edge_types(query) == expected


# SYNAPSE (section 4 traces, item 19) ----------------------------------------------------------


def test_a_seed_alone_on_an_empty_graph_is_its_own_result() -> None:
    result = spread({node("A"): 1.0}, Graph([]), ActivationParams(), now=NOW)

    assert [(a.entity_id, a.activation, a.depth) for a in result.nodes] == [(node("A"), 1.0, 0)]
    assert result.facts == []


def test_a_chain_decays_by_lambda_per_hop_with_inhibition() -> None:
    chain = [link("A", "B"), link("B", "C")]

    assert scores(chain, ActivationParams(decay_lambda=0.9)) == {"A": 1.0, "B": 0.9, "C": 0.81}
    assert scores(chain, ActivationParams()) == {"A": 1.0, "B": 0.85, "C": 0.7225}
    assert scores(chain, ActivationParams(max_hops=1)) == {"A": 1.0, "B": 0.85}


def test_a_causal_edge_is_weighted_up_and_clamped_at_one() -> None:
    assert scores([link("A", "B", edge_type="causal")], ActivationParams())["B"] == 1.0


def test_converging_paths_add_up_in_a_diamond() -> None:
    diamond = [link("A", "B"), link("A", "C"), link("B", "D"), link("C", "D")]
    params = ActivationParams(decay_lambda=0.9, inhibition_threshold=0.95)

    result = spread({node("A"): 1.0}, Graph(diamond), params, now=NOW)

    depth = {a.entity_id: (a.activation, a.depth) for a in result.nodes}
    assert depth[node("D")] == (1.0, 2)
    assert depth[node("B")] == (1.0, 3)


def test_a_weak_seed_keeps_spreading_and_is_not_monotone_in_depth() -> None:
    chain = [link("A", "B", confidence=0.9), link("B", "C", confidence=0.9)]

    after_one = spread({node("A"): 0.5}, Graph(chain), ActivationParams(max_hops=1), now=NOW)
    after_three = spread({node("A"): 0.5}, Graph(chain), ActivationParams(), now=NOW)

    b_one = next(a for a in after_one.nodes if a.entity_id == node("B"))
    b_three = next(a for a in after_three.nodes if a.entity_id == node("B"))
    assert math.isclose(b_one.activation, 0.3825)
    assert math.isclose(b_three.activation, 0.6063, abs_tol=1e-4)
    assert b_three.depth == 3


def test_a_hub_stays_clamped_at_one() -> None:
    leaves = [link("A", x) for x in "BCDEF"] + [link(x, "A") for x in "BCDEF"]

    assert max(scores(leaves, ActivationParams()).values()) <= 1.0


def test_pruning_keeps_at_most_max_activated_nodes() -> None:
    leaves = [link("A", f"leaf{i}") for i in range(20)]

    result = spread(
        {node("A"): 1.0}, Graph(leaves), ActivationParams(max_activated_nodes=5), now=NOW
    )

    assert len(result.nodes) <= 5


def test_recent_edges_spread_more_than_old_ones() -> None:
    edges = [
        link("A", "B", valid_from=NOW - timedelta(days=1)),
        link("A", "C", valid_from=datetime(1970, 1, 1, tzinfo=UTC)),
    ]

    found = scores(edges, ActivationParams(temporal_decay_rate=0.5))

    assert found["B"] > found.get("C", 0.0)


def test_an_edge_type_filter_excludes_other_types() -> None:
    edges = [link("A", "B"), link("A", "C", edge_type="causal")]

    assert set(scores(edges, ActivationParams(), edge_types=["semantic"])) == {"A", "B"}


def test_seeds_under_the_threshold_are_dropped_and_many_seeds_are_fine() -> None:
    seeds = {node(f"s{i}"): 0.5 for i in range(100)} | {node("weak"): 0.05}

    result = spread(seeds, Graph([]), ActivationParams(), now=NOW)

    assert len(result.nodes) == 50
    assert node("weak") not in {a.entity_id for a in result.nodes}


def test_edges_are_asked_for_in_chunks_of_at_most_490_ids() -> None:
    graph = Graph([])

    spread({node(f"s{i}"): 1.0 for i in range(1000)}, graph, ActivationParams(), now=NOW)

    assert max(graph.calls) <= CHUNK_IDS


def test_the_time_budget_returns_what_it_has_marked_as_cut_short() -> None:
    chain = [link("A", "B"), link("B", "C")]
    hops = iter([False, True])

    result = spread(
        {node("A"): 1.0}, Graph(chain), ActivationParams(), now=NOW, out_of_time=lambda: next(hops)
    )

    assert result.cut_short
    assert {a.entity_id for a in result.nodes} == {node("A"), node("B")}


def test_facts_hold_each_edge_once_with_the_stronger_end() -> None:
    chain = [link("A", "B"), link("B", "C")]

    result = spread({node("A"): 1.0}, Graph(chain), ActivationParams(), now=NOW)

    assert [(e.edge_id, round(s, 4)) for e, s in result.facts] == [
        (chain[0].edge_id, 1.0),
        (chain[1].edge_id, 0.85),
    ]


@given(
    st.lists(
        st.tuples(st.sampled_from("ABCDEFG"), st.sampled_from("ABCDEFG"), st.floats(0.1, 1.0)),
        max_size=15,
    ),
    st.floats(0.1, 1.0),
)
def test_activation_stays_within_zero_and_one_and_above_the_threshold(
    triples: list[tuple[str, str, float]], seed: float
) -> None:
    edges = [link(a, b, confidence=c) for a, b, c in triples if a != b]
    params = ActivationParams()

    result = spread({node("A"): seed}, Graph(edges), params, now=NOW)

    assert all(params.activation_threshold <= a.activation <= 1.0 for a in result.nodes)
    assert len(result.nodes) <= params.max_activated_nodes


# Fusion ---------------------------------------------------------------------------------------


def test_reciprocal_rank_fusion_rewards_items_ranked_by_several_lists() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]])

    assert [item for item, _ in fused] == ["b", "a", "d", "c"]
    assert math.isclose(dict(fused)["b"], 1 / 62 + 1 / 61)


def test_dedupe_keeps_the_best_per_key() -> None:
    items = [("x", 0.2), ("y", 0.9), ("x", 0.7)]

    assert dedupe(items, key=lambda i: i[0], score=lambda i: i[1]) == [("y", 0.9), ("x", 0.7)]


# Context lines --------------------------------------------------------------------------------


def test_context_lines_strip_newlines_and_angle_brackets() -> None:
    assert clean_line("Rust <b>uses</b>\ncargo\r\n") == "Rust b uses /b cargo"


def test_context_lines_stop_at_the_budget() -> None:
    facts = [("Rust uses cargo", 0.95), ("Alice uses Rust", 0.9), ("Bob knows Alice", 0.8)]

    text = format_lines(facts, budget_chars=75)

    assert text == "- Rust uses cargo (confidence: 0.95)\n- Alice uses Rust (confidence: 0.90)"
    assert format_lines(facts, budget_chars=10) == ""


def test_activation_defaults_are_the_settings_defaults() -> None:
    assert ActivationParams.of(GraphSettings()) == ActivationParams()
