"""Community detection, pure: fingerprints, label propagation, plans, votes and summaries.

Cases from the reference (digest section 5 and section 7 item 23) where it has them.
"""

from __future__ import annotations

import itertools
from uuid import UUID, uuid5

import msgspec

from apexmem.domain.communities import (
    Detected,
    GraphEdge,
    Node,
    StoredCommunity,
    assign,
    community_name,
    detect,
    fingerprint,
    plan,
    propagate_labels,
    vote,
)
from apexmem.domain.summaries import (
    CommunityDraft,
    DraftFact,
    DraftMember,
    ExtractiveSummarizer,
    truncate_prompt,
)

NS = UUID("00000000-0000-0000-0000-000000000001")


def node(name: str, key: int) -> Node:
    return Node(uuid5(NS, name), key, name)


def edge(a: Node, b: Node, key: int) -> GraphEdge:
    return GraphEdge(uuid5(NS, f"edge/{key}"), key, a.entity_id, b.entity_id)


def names(found: list[Detected]) -> list[list[str]]:
    return [[m.name for m in d.members] for d in found]


def chain(*members: Node, first_key: int = 100) -> list[GraphEdge]:
    return [edge(a, b, first_key + i) for i, (a, b) in enumerate(itertools.pairwise(members))]


A, B, C, D, E = (node(n, k) for k, n in enumerate(["A", "B", "C", "D", "E"], start=1))


def test_fingerprints_match_the_reference_values() -> None:
    assert (
        fingerprint([1, 2, 3], [10, 20])
        == "89cfe07b610044d034cbc80820e0647400983a760f52b7e15c99cfdb7fb42e42"
    )
    assert (
        fingerprint([1, 2], [3])
        == "d2e8aee9a65438bd44983b20f46008a7f568677c80f9b52cba2c4ac6dd4756e8"
    )
    assert (
        fingerprint([1], [2, 3])
        == "f42ac162c960e1c5ab2cef8689902d45c84ac4bbd77d3d2f67cc2294cf3f7a40"
    )


def test_a_fingerprint_does_not_depend_on_the_order_of_its_keys() -> None:
    assert fingerprint([3, 1, 2], [20, 10]) == fingerprint([1, 2, 3], [10, 20])


def test_label_propagation_gives_a_chain_its_smallest_reachable_label() -> None:
    labels = propagate_labels([[1], [0, 2], [1], []])

    assert labels == [1, 1, 1, 3]


def test_an_empty_graph_has_no_communities() -> None:
    assert detect([], []) == []


def test_a_single_entity_is_no_community() -> None:
    assert detect([A], []) == []


def test_a_chain_is_one_community_without_the_isolated_entity() -> None:
    found = detect([A, B, C, D], chain(A, B, C))

    assert names(found) == [["A", "B", "C"]]
    assert [e.key for e in found[0].edges] == [100, 101]


def test_four_disjoint_chains_are_four_communities_each_cluster_in_exactly_one() -> None:
    clusters = [[node(f"n{c}-{i}", 10 * c + i) for i in range(3)] for c in range(4)]
    edges = [e for c, members in enumerate(clusters) for e in chain(*members, first_key=100 * c)]

    found = detect([n for members in clusters for n in members], edges)

    assert sorted(names(found)) == sorted([[n.name for n in members] for members in clusters])


def test_isolated_entities_form_no_community() -> None:
    assert detect([node(f"loner{i}", i) for i in range(5)], []) == []


def test_merged_entities_count_as_the_entity_they_were_merged_into() -> None:
    ghost = node("B-old", 99)

    found = detect(
        [A, B, C], [edge(A, ghost, 1), edge(B, C, 2)], merged={ghost.entity_id: B.entity_id}
    )

    assert names(found) == [["A", "B", "C"]]


def test_self_loops_and_edges_to_unknown_entities_are_left_out() -> None:
    stranger = node("stranger", 50)

    found = detect([A, B], [edge(A, A, 1), edge(A, stranger, 2)])

    assert found == []


def test_a_community_is_named_after_its_first_three_members_and_its_label_index() -> None:
    members = (node("Alice\u200b", 1), node("Bob", 2), node("Carol", 3), node("Dan", 4))

    assert community_name(members, 2) == "Alice, Bob, Carol [2]"


def test_a_plan_leaves_held_fingerprints_alone_and_dissolves_the_ones_not_found() -> None:
    found = detect([A, B, C, D, E], [*chain(A, B, C), edge(D, E, 200)])
    kept, gone = found[0], StoredCommunity(community_id=NS, fingerprint="f" * 64, stale=False)
    held = StoredCommunity(community_id=A.entity_id, fingerprint=kept.fingerprint, stale=False)

    done = plan(found, [held, gone])

    assert [d.fingerprint for d in done.form] == [found[1].fingerprint]
    assert done.dissolve == [gone]
    assert done.unchanged == 1


def test_a_stale_community_found_again_is_formed_again_not_dissolved() -> None:
    found = detect([A, B, C], chain(A, B, C))
    stale = StoredCommunity(community_id=NS, fingerprint=found[0].fingerprint, stale=True)

    done = plan(found, [stale])

    assert (len(done.form), done.dissolve, done.unchanged) == (1, [], 0)


def test_a_vote_goes_to_the_community_of_most_neighbours_and_ties_to_the_one_formed_first() -> None:
    x, y = uuid5(NS, "x"), uuid5(NS, "y")
    membership = {A.entity_id: x, B.entity_id: y, C.entity_id: y}
    rank = {x: (1, x.hex), y: (2, y.hex)}

    assert vote([A.entity_id, B.entity_id, C.entity_id], membership, rank) == (y, 2, 3)
    assert vote([A.entity_id, B.entity_id], membership, rank) == (x, 1, 2)
    assert vote([D.entity_id], membership, rank) is None


def test_assignment_places_an_entity_by_its_neighbours_and_leaves_a_loner_out() -> None:
    x = uuid5(NS, "test_community")
    loner = node("loner", 9)

    placed = assign(
        [A, B, C, D, loner],
        [edge(D, A, 1), edge(D, B, 2)],
        {A.entity_id: x, B.entity_id: x},
        {x: (1, x.hex)},
    )

    assert placed == [(D.entity_id, (x, 2, 2))]


def test_an_entity_placed_votes_for_the_next_one() -> None:
    x = uuid5(NS, "x")

    placed = assign([A, B, C, D], [edge(A, C, 1), edge(C, D, 2)], {A.entity_id: x}, {x: (1, "")})

    assert [entity for entity, _ in placed] == [C.entity_id, D.entity_id]


def test_truncating_a_prompt_keeps_whole_characters_and_marks_the_cut() -> None:
    assert truncate_prompt("short", 100) == "short"
    assert truncate_prompt("hello", 0) == ""
    cut = truncate_prompt("🔥" * 100, 10)
    assert cut == "🔥…"  # the mark counts against the bytes: 4 + 3 <= 10
    assert len(cut.encode()) == 7
    assert len(truncate_prompt("x" * 200, 100).encode()) == 100
    assert truncate_prompt("hello", 2) == "he"  # no room for the mark


def draft() -> CommunityDraft:
    members = tuple(
        DraftMember(entity_id=n.entity_id, name=n.name, entity_type="person", key=n.key)
        for n in (A, B, C)
    )
    facts = (
        DraftFact(
            subject_id=A.entity_id,
            object_id=B.entity_id,
            relation="knows",
            fact="A knows B",
            confidence=0.5,
            key=1,
        ),
        DraftFact(
            subject_id=B.entity_id,
            object_id=C.entity_id,
            relation="works_with",
            fact="B works with C.",
            confidence=0.9,
            key=2,
        ),
    )
    return CommunityDraft(fingerprint="f" * 64, name="A, B, C [0]", members=members, facts=facts)


def test_the_extractive_summary_names_the_best_connected_members_relations_and_surest_facts() -> (
    None
):
    summary = ExtractiveSummarizer().summarize(draft())

    assert summary == (
        "B, A and C (3 entities), linked mostly by knows (1) and works_with (1). "
        "B works with C; A knows B."
    )


def test_a_prompt_lists_the_members_and_the_facts_within_its_byte_budget() -> None:
    full = draft().prompt()
    short = msgspec.structs.replace(draft(), max_prompt_bytes=40).prompt()

    assert "Entities: A, B, C" in full
    assert "- B works with C." in full
    assert len(short.encode()) <= 40 + len("…".encode())
    assert short.endswith("…")
