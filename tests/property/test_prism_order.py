"""PRISM query-sensitive edge costing (`[memory.graph] query_sensitive_cost`): it changes
the order a BFS expands entities in, never what the expansion keeps or a recall returns.
Real SQLite and FAISS; the hashing embedder stands in for WordLlama."""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.recall import composite_score
from apexmem.domain.recall.prism import edge_cost
from apexmem.domain.settings import (
    GraphSettings,
    MemorySettings,
    RecallSettings,
    Settings,
    VectorSettings,
)
from apexmem.readmodels.traverse import Expansion, Walked, expand
from apexmem.service.prism import query_costs

_TYPES = ["semantic", "causal", "temporal", "entity"]
_WORDS = ["tea", "coffee", "green", "black", "house", "shop", "river", "stone", "lamp"]


def _score(edge: Walked, hop: int, match: float) -> float:
    return composite_score(match, hop, edge.confidence, edge.edge_type)


def _graph(graph: random.Random, nodes: int = 12) -> list[dict[str, Any]]:
    """About 40 edges over `nodes` entities named by two words, a few of them hubs."""
    names = [
        f"{graph.choice(_WORDS).title()} {graph.choice(_WORDS).title()} {i}" for i in range(nodes)
    ]
    facts = []
    for i in range(40):
        subject = graph.choice([0, 1, 2]) if graph.random() < 0.6 else graph.randrange(nodes)
        obj = (subject + 1 + graph.randrange(nodes - 1)) % nodes
        facts.append(
            {
                "subject": names[subject],
                "relation": f"r{i}",
                "object": names[obj],
                "edge_type": graph.choice(_TYPES),
                "confidence": graph.choice([0.3, 0.6, 0.9, 1.0]),
                "fact": f"{names[subject]} {graph.choice(_WORDS)} {names[obj]}",
            }
        )
    return facts


def _kept(expansion: Expansion) -> list[tuple[float, str, int, str]]:
    return [(round(s.score, 12), s.edge.fact_id, s.hop, s.seed) for s in expansion.edges]


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    graph=st.randoms(use_true_random=False),
    keep=st.integers(1, 6),
    hops=st.integers(1, 3),
    limit=st.integers(1, 6),
    noise=st.dictionaries(st.integers(0, 11), st.floats(0, 1), max_size=12),
)
def test_ordering_the_frontier_by_cost_keeps_what_the_expansion_returns(
    tmp_path_factory: pytest.TempPathFactory,
    *,
    graph: random.Random,
    keep: int,
    hops: int,
    limit: int,
    noise: dict[int, float],
) -> None:
    """Any costs at all (here the PRISM cost of a random similarity per entity): the same
    edges, scores, entities reached and entities expanded; each hop cheapest first."""
    with Memory.open(tmp_path_factory.mktemp("prism"), embedder=HashingEmbedder(64)) as memory:
        memory.assert_facts(_graph(graph))
        ids = sorted(e.entity_id for e in memory.entities())
        similarity = {e.hex: noise.get(i, 0.5) for i, e in enumerate(ids)}
        start = {e: graph.choice([0.3, 0.6, 1.0]) for e in graph.sample(ids, 2)}
        asked: list[dict[str, float]] = []

        def costs(over: Mapping[str, float]) -> dict[str, float]:
            found = {n: edge_cost(c, similarity[n]) for n, c in over.items()}
            asked.append(found)
            return found

        with memory.store.read() as connection:
            plain, ordered = (
                expand(
                    connection, start, score=_score, keep=keep, max_hops=hops,
                    frontier_limit=limit, ceiling=1.5, evolved=True, costs=chosen,
                )
                for chosen in (None, costs)
            )  # fmt: skip

    assert _kept(ordered) == _kept(plain)
    assert ordered.reached == plain.reached
    assert sorted(ordered.expanded) == sorted(plain.expanded)
    taken = iter(ordered.expanded)
    for hop in asked:
        order = [next(taken) for _ in hop]
        assert [hop[n] for n in order] == sorted(hop.values())


def _hub(memory: Memory) -> dict[str, str]:
    """A hub with four neighbours, all over edges of one confidence; their ids by name."""
    leaves = ["Black Coffee", "Green Tea", "River Stone", "Oolong Tea House"]
    memory.assert_facts(
        [
            {"subject": "Hub", "relation": f"r{i}", "object": leaf, "confidence": 0.8}
            for i, leaf in enumerate(leaves)
        ]
    )
    return {e.name: e.entity_id.hex for e in memory.entities()}


def test_the_entities_nearest_the_question_are_expanded_first(memory: Memory) -> None:
    ids = _hub(memory)
    question = memory.similarity.embedder.embed(["green tea"])[0]  # type: ignore[union-attr]
    hub = next(e.entity_id for e in memory.entities() if e.name == "Hub")
    model = memory.similarity.embedder.name  # type: ignore[union-attr]

    with memory.store.read() as connection:
        runs = [
            expand(connection, {hub: 1.0}, score=_score, keep=10, max_hops=2, costs=costs)
            for costs in (None, query_costs(connection, question, model=model))
        ]

    plain, prism = (run.expanded[1:] for run in runs)
    assert plain == sorted(plain)  # equal strengths: by id
    assert prism[0] == ids["Green Tea"]
    assert prism[-1] in {ids["Black Coffee"], ids["River Stone"]}
    assert sorted(prism) == plain
    assert _kept(runs[0]) == _kept(runs[1])


def test_without_a_question_vector_the_cost_is_the_edge_confidence_alone(memory: Memory) -> None:
    ids = _hub(memory)
    model = memory.similarity.embedder.name  # type: ignore[union-attr]
    over = {ids["Green Tea"]: 0.9, ids["Black Coffee"]: 0.4}

    with memory.store.read() as connection:
        costs = query_costs(connection, None, model=model)(over)
        unknown = query_costs(connection, None, model="another model")(over)

    assert costs == unknown == {ids["Green Tea"]: pytest.approx(0.1), ids["Black Coffee"]: 0.6}


def _settings(on: bool, *, vectors: bool = True) -> Settings:
    return Settings(
        memory=MemorySettings(
            graph=GraphSettings(query_sensitive_cost=on),
            recall=RecallSettings(record_usage=False),
            vectors=VectorSettings(enabled=vectors, embedder="hashing"),
        )
    )


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    graph=st.randoms(use_true_random=False),
    question=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map(" ".join),
    vectors=st.booleans(),
)
def test_a_recall_returns_the_same_with_and_without_query_sensitive_cost(
    tmp_path_factory: pytest.TempPathFactory,
    *,
    graph: random.Random,
    question: str,
    vectors: bool,
) -> None:
    """Vectors off: PRISM falls back to the confidence alone, silently."""
    where: Path = tmp_path_factory.mktemp("recall")
    with Memory.open(where, settings=_settings(False, vectors=vectors)) as memory:
        memory.assert_facts(_graph(graph))
        before = memory.recall(question, limit=10, mode="bfs")
    with Memory.open(where, settings=_settings(True, vectors=vectors)) as memory:
        after = memory.recall(question, limit=10, mode="bfs")

    assert [(h.item_id, h.score, h.why) for h in after] == [
        (h.item_id, h.score, h.why) for h in before
    ]
