"""The recall's last hop read strongest first (readmodels.strongest) keeps what a walk of
every edge keeps: the same edges, scores, hops and seeds, on random graphs with busy
entities, tied confidences and matches, and retrieval counts. Real SQLite and a real
PostgreSQL server; the hashing embedder stands in for WordLlama.
"""

from __future__ import annotations

import random
import uuid
from typing import Any, Final
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pg_schemas import postgres_schema

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.recall import EDGE_TYPE_WEIGHTS, composite_score
from apexmem.events.envelope import NewEvent
from apexmem.events.policy import FactsRetrieved
from apexmem.readmodels import traverse
from apexmem.readmodels.moment import Lens
from apexmem.readmodels.traverse import Expansion, Walked, expand

_TYPES = ["semantic", "causal", "temporal", "entity"]


def _score(edge: Walked, hop: int, match: float) -> float:
    return composite_score(
        match, hop, edge.confidence, edge.edge_type, retrieval_count=edge.retrievals
    )


def _graph(graph: random.Random, nodes: int) -> list[dict[str, Any]]:
    """60 edges over `nodes` nodes, most touching the two hubs (Node0, Node1). Over 9
    nodes nearly every node is a hop from a seed; over more, entities two and three hops
    out are reached from seeds of different strengths."""
    facts = []
    for i in range(60):
        subject = graph.choice([0, 1, 1, 2]) if graph.random() < 0.7 else graph.randrange(nodes)
        obj = (subject + 1 + graph.randrange(nodes - 1)) % nodes
        facts.append(
            {
                "subject": f"Node{subject}",
                "relation": f"r{i}",
                "object": f"Node{obj}",
                "edge_type": graph.choice(_TYPES),
                "confidence": graph.choice([0.3, 0.6, 0.6, 0.9, 1.0]),
            }
        )
    return facts


def _kept(expansion: Expansion) -> list[tuple[float, str, int, str]]:
    return [(round(s.score, 12), s.edge.fact_id, s.hop, s.seed) for s in expansion.edges]


_GRAPHS: Final = {
    "graph": st.randoms(use_true_random=False),
    "keep": st.integers(1, 4),
    "hops": st.integers(1, 3),
    "types": st.sampled_from([(), ("semantic",), ("semantic", "causal"), ("entity", "temporal")]),
    "top": st.sampled_from([1, 2, 4, 8]),
    "nodes": st.sampled_from([9, 30]),
}


_DRAWN: Final = st.fixed_dictionaries(_GRAPHS)
"""A graph (the random source, and its `nodes`), and `keep`, `hops`, `types`, `top` of the
walk."""


@settings(max_examples=40)
@given(drawn=_DRAWN)
def test_the_last_hop_read_strongest_first_keeps_what_a_full_walk_keeps(
    tmp_path_factory: pytest.TempPathFactory, drawn: dict[str, Any]
) -> None:
    """`top` edges per side read first (32 in a recall): few, so that the rest of an
    entity, and the edges with a retrieval count, are often needed."""
    with Memory.open(tmp_path_factory.mktemp("hop"), embedder=HashingEmbedder(64)) as memory:
        _check(memory, **drawn)


@settings(max_examples=12, deadline=None)
@given(drawn=_DRAWN)
def test_the_last_hop_on_postgresql_keeps_what_a_full_walk_keeps(drawn: dict[str, Any]) -> None:
    """The same on PostgreSQL, whose strongest edges are read in another order of the index
    (`strongest._strongest_statement`)."""
    with (
        postgres_schema("hop") as url,
        Memory.open(url, embedder=HashingEmbedder(64)) as memory,
    ):
        _check(memory, **drawn)


def _check(
    memory: Memory,
    *,
    graph: random.Random,
    keep: int,
    hops: int,
    types: tuple[str, ...],
    top: int,
    nodes: int,
) -> None:
    """The last hop read strongest first, and walked whole, keep the same edges."""
    memory.assert_facts(_graph(graph, nodes))
    ids = {e.name: e.entity_id for e in memory.entities()}
    believed = {f.fact_id: f for n in sorted(ids) for f in memory.facts_about(n)}
    # Mostly weak edges: a count lifts a 0.3 or 0.6 edge past stronger unread ones
    # only when the walk reads the edges with a retrieval count apart.
    weak = sorted(i for i, f in believed.items() if f.confidence <= 0.6)
    retrieved = graph.sample(weak, min(len(weak), 5)) + graph.sample(sorted(believed), 1)
    memory.log.append(
        [
            NewEvent(stream_id=uuid.uuid4(), version=1, data=FactsRetrieved(fact_ids=[f]))
            for f in retrieved
            for _ in range(graph.choice([1, 4, 30, 120]))
        ]
    )
    assert memory.retrieval_counts(retrieved)  # projected: the counts are read
    start = {
        ids[n]: graph.choice([0.2, 0.5, 0.5, 1.0])
        for n in graph.sample(sorted(ids), min(3, len(ids)))
    }
    ceiling = max(EDGE_TYPE_WEIGHTS[t] for t in types or _TYPES)
    runs = []
    with (
        memory.store.read() as connection,
        patch.object(traverse, "_TOP", top),
        patch.object(traverse, "_TOP_PER_KEPT", 0),
    ):
        for evolved, bound in ((True, ceiling), (False, ceiling), (False, float("inf"))):
            runs.append(
                expand(
                    connection,
                    start,
                    score=_score,
                    keep=keep,
                    ceiling=bound,
                    max_hops=hops,
                    lens=Lens(edge_types=tuple(types)),
                    evolved=evolved,
                )
            )
    ranked, walked, full = (_kept(r) for r in runs)
    assert ranked == walked == full


def test_a_weak_edge_lifted_by_its_retrievals_is_not_left_unread(tmp_path: Any) -> None:
    """The hub's two most confident edges are read first (0.95, 0.9): the bound then says
    no unread edge beats 0.95. Only the read of the edges with a retrieval count finds
    the 0.6 edge recalled 200 times, whose evolved weight is 1.0."""
    strengths = [0.95, 0.9, 0.9, 0.9, 0.6, 0.3, 0.3]
    with Memory.open(tmp_path, embedder=HashingEmbedder(64)) as memory:
        refs = memory.assert_facts(
            [
                {"subject": "Hub", "relation": f"r{i}", "object": f"Leaf{i}",
                 "edge_type": "semantic", "confidence": c}
                for i, c in enumerate(strengths)
            ]
        )  # fmt: skip
        lifted = refs[strengths.index(0.6)].fact_id
        memory.log.append(
            [
                NewEvent(stream_id=uuid.uuid4(), version=1, data=FactsRetrieved(fact_ids=[lifted]))
                for _ in range(200)
            ]
        )
        assert memory.retrieval_counts([lifted])
        hub = next(e.entity_id for e in memory.entities() if e.name == "Hub")
        with (
            memory.store.read() as connection,
            patch.object(traverse, "_TOP", 2),
            patch.object(traverse, "_TOP_PER_KEPT", 0),
        ):
            runs = [
                expand(connection, {hub: 1.0}, score=_score, keep=1, ceiling=1.0, max_hops=1,
                       lens=Lens(edge_types=("semantic",)), evolved=evolved)
                for evolved in (True, False)
            ]  # fmt: skip
    assert [s.edge.fact_id for s in runs[0].edges] == [lifted.hex]
    assert _kept(runs[0]) == _kept(runs[1])


def test_an_edge_scored_from_its_far_end_is_not_pruned_with_its_near_end(tmp_path: Any) -> None:
    """Seeds Strong (1.0) and Weak (0.5), `keep` 1: after the first hop the floor is 0.3
    (Strong-Near). Far is two hops from Strong, over Near; Weak's neighbour Mid has an edge
    to Far of confidence 1.0. Mid's own bound (0.5 / 2 = 0.25) is under the floor, but the
    edge Mid-Far scores from Far's end, 1.0 / 3: a walk that prunes Mid by its own bound
    keeps Strong-Near instead (the discrepancy a random run found on PostgreSQL)."""
    edges = [("Strong", "Near", 0.3), ("Near", "Far", 0.3), ("Weak", "Mid", 0.3),
             ("Mid", "Far", 1.0)]  # fmt: skip
    with Memory.open(tmp_path, embedder=HashingEmbedder(64)) as memory:
        refs = memory.assert_facts(
            [
                {"subject": s, "relation": "r", "object": o, "edge_type": "semantic",
                 "confidence": c}
                for s, o, c in edges
            ]
        )  # fmt: skip
        ids = {e.name: e.entity_id for e in memory.entities()}
        seeds = {ids["Strong"]: 1.0, ids["Weak"]: 0.5}
        with memory.store.read() as connection:
            runs = [
                expand(connection, seeds, score=_score, keep=1, ceiling=bound, max_hops=2,
                       lens=Lens(edge_types=("semantic",)), evolved=evolved)
                for evolved, bound in ((True, 1.0), (False, 1.0), (False, float("inf")))
            ]  # fmt: skip
    far = runs[2].edges[0]
    assert (far.edge.fact_id, far.hop, far.seed) == (refs[3].fact_id.hex, 2, ids["Strong"].hex)
    assert far.score == pytest.approx(1 / 3)
    assert _kept(runs[0]) == _kept(runs[1]) == _kept(runs[2])
