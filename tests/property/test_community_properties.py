"""Properties of community detection on random graphs (pure, no storage).

Communities partition part of the graph into groups of two or more connected entities, each
edge inside one is listed once, fingerprints restate membership, and the answer does not
depend on the order the graph was read in (only on the entities' and edges' keys).
"""

from __future__ import annotations

import random
from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from apexmem.domain.communities import (
    GraphEdge,
    Node,
    StoredCommunity,
    assign,
    detect,
    fingerprint,
    plan,
)


def graphs() -> st.SearchStrategy[tuple[list[Node], list[GraphEdge]]]:
    """Up to 12 entities and 20 edges (parallel edges and self-loops included)."""

    def build(size: int) -> st.SearchStrategy[tuple[list[Node], list[GraphEdge]]]:
        nodes = [Node(UUID(int=i + 1), 10 + i, f"n{i}") for i in range(size)]
        pairs = st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, size - 1)), max_size=20)
        return pairs.map(
            lambda ps: (
                nodes,
                [
                    GraphEdge(UUID(int=1000 + k), 500 + k, nodes[a].entity_id, nodes[b].entity_id)
                    for k, (a, b) in enumerate(ps)
                ],
            )
        )

    return st.integers(min_value=1, max_value=12).flatmap(build)


def components(nodes: list[Node], edges: list[GraphEdge]) -> dict[UUID, int]:
    """Connected component of each entity (undirected)."""
    parent = {n.entity_id: n.entity_id for n in nodes}

    def find(x: UUID) -> UUID:
        while parent[x] != x:
            x = parent[x]
        return x

    for e in edges:
        parent[find(e.subject_id)] = find(e.object_id)
    roots = sorted({find(n.entity_id) for n in nodes})
    return {n.entity_id: roots.index(find(n.entity_id)) for n in nodes}


@given(graphs())
def test_communities_are_disjoint_connected_groups_of_two_or_more(
    graph: tuple[list[Node], list[GraphEdge]],
) -> None:
    nodes, edges = graph

    found = detect(nodes, edges)

    members = [m.entity_id for d in found for m in d.members]
    assert len(members) == len(set(members))
    component = components(nodes, edges)
    for d in found:
        assert len(d.members) >= 2
        assert len({component[m.entity_id] for m in d.members}) == 1
        inside = {m.entity_id for m in d.members}
        expected = sorted(
            e.key
            for e in edges
            if e.subject_id in inside and e.object_id in inside and e.subject_id != e.object_id
        )
        assert [e.key for e in d.edges] == expected
        assert d.fingerprint == fingerprint([m.key for m in d.members], expected)


@given(graphs(), st.randoms(use_true_random=False))
def test_the_order_the_graph_is_read_in_changes_nothing(
    graph: tuple[list[Node], list[GraphEdge]], shuffler: random.Random
) -> None:
    nodes, edges = graph
    shuffled_nodes, shuffled_edges = list(nodes), list(edges)
    shuffler.shuffle(shuffled_nodes)
    shuffler.shuffle(shuffled_edges)

    assert detect(shuffled_nodes, shuffled_edges) == detect(nodes, edges)


@given(graphs())
def test_a_detection_planned_against_itself_changes_nothing(
    graph: tuple[list[Node], list[GraphEdge]],
) -> None:
    nodes, edges = graph
    found = detect(nodes, edges)
    held = [
        StoredCommunity(community_id=UUID(int=i + 1), fingerprint=d.fingerprint, stale=False)
        for i, d in enumerate(found)
    ]

    again = plan(detect(nodes, edges), held)

    assert (again.form, again.dissolve, again.unchanged) == ([], [], len(found))


@given(graphs())
def test_assignment_only_places_entities_next_to_a_member(
    graph: tuple[list[Node], list[GraphEdge]],
) -> None:
    nodes, edges = graph
    found = detect(nodes, edges[: len(edges) // 2])
    membership = {m.entity_id: UUID(int=9000 + i) for i, d in enumerate(found) for m in d.members}
    rank = {c: (0, c.hex) for c in membership.values()}

    placed = assign(nodes, edges, membership, rank)

    seen = dict(membership)
    for entity, vote in placed:
        assert entity not in membership
        neighbours = [
            other
            for e in edges
            for mine, other in ((e.subject_id, e.object_id), (e.object_id, e.subject_id))
            if mine == entity and other != entity
        ]
        assert vote.votes == sum(seen.get(n) == vote.community for n in neighbours)
        assert vote.cast == sum(n in seen for n in neighbours)
        seen[entity] = vote.community
