"""Read-model queries on a real memory: the digest's cases (section 7, items 11-14) adapted to
slots, the two time axes, entity lookup, merges, replay and rebuild.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from apexmem import ApexmemError, Memory, ValidationError
from apexmem.domain.recall import ActivationParams, spread
from apexmem.events.log import EventLog
from apexmem.readmodels import dump
from apexmem.readmodels.spread_edges import activation_edges


def year(value: int, month: int = 1, day: int = 1) -> datetime:
    """A date at midnight UTC."""
    return datetime(value, month, day, tzinfo=UTC)


def edge(subject: str, relation: str, obj: str, **extra: Any) -> dict[str, Any]:
    """Fields of `subject relation obj` between two concepts."""
    return {"subject": subject, "relation": relation, "object": obj, **extra}


def job(employer: str, since: datetime, **extra: Any) -> dict[str, Any]:
    """Fields of `Alice works_at <employer>` from `since`."""
    return {
        "subject": "Alice",
        "subject_type": "person",
        "relation": "works_at",
        "object": employer,
        "object_type": "organization",
        "valid_from": since,
        **extra,
    }


def names(memory: Memory, start: str, **options: Any) -> set[str]:
    """Names of the entities a traversal reaches."""
    return {e.name for e in memory.traverse(start, **options).entities}


# BFS (item 11) --------------------------------------------------------------------------------


def test_zero_hops_reach_only_the_start_and_no_edges(memory: Memory) -> None:
    memory.assert_fact(**edge("Node A", "links", "Node B"))

    found = memory.traverse("Node A", max_hops=0)

    assert [e.name for e in found.entities] == ["Node A"]
    assert found.facts == []


def test_a_chain_of_three_is_reached_in_two_hops_with_both_edges(memory: Memory) -> None:
    memory.assert_facts([edge("Node A", "links", "Node B"), edge("Node B", "links", "Node C")])

    found = memory.traverse("Node A", max_hops=2)

    assert {(e.name, e.hops) for e in found.entities} == {
        ("Node A", 0),
        ("Node B", 1),
        ("Node C", 2),
    }
    assert len(found.facts) == 2


def test_a_cycle_is_safe_and_reaches_each_entity_once(memory: Memory) -> None:
    memory.assert_facts([edge("Node A", "links", "Node B"), edge("Node B", "links", "Node A")])

    found = memory.traverse("Node A", max_hops=3)

    assert sorted(e.name for e in found.entities) == ["Node A", "Node B"]
    assert len(found.facts) == 2


def test_an_ended_edge_is_not_traversed_now(memory: Memory) -> None:
    [ab] = memory.assert_facts([edge("Node A", "links", "Node B", valid_from=year(2020))])
    memory.retract(ab.fact_id, valid_until=year(2021))

    assert names(memory, "Node A") == {"Node A"}


def test_a_withdrawn_edge_is_not_traversed(memory: Memory) -> None:
    [ab] = memory.assert_facts([edge("Node A", "links", "Node B")])
    memory.retract(ab.fact_id)

    assert names(memory, "Node A") == {"Node A"}


def test_a_diamond_has_four_entities_and_four_edges(memory: Memory) -> None:
    memory.assert_facts(
        [
            edge("Node A", "links", "Node B"),
            edge("Node A", "links", "Node C"),
            edge("Node B", "links", "Node D"),
            edge("Node C", "links", "Node D"),
        ]
    )

    found = memory.traverse("Node A", max_hops=2)

    assert len(found.entities) == 4
    assert len(found.facts) == 4
    assert {e.name: e.hops for e in found.entities}["Node D"] == 2


def test_typed_traversal_follows_only_the_listed_edge_types(memory: Memory) -> None:
    memory.assert_facts(
        [
            edge("Node A", "links", "Node B", edge_type="semantic"),
            edge("Node A", "causes", "Node C", edge_type="causal"),
        ]
    )

    assert names(memory, "Node A", edge_types=["semantic"]) == {"Node A", "Node B"}
    assert names(memory, "Node A", edge_types=["semantic", "causal"]) == {
        "Node A",
        "Node B",
        "Node C",
    }


def test_an_unknown_edge_type_is_refused_with_its_position(memory: Memory) -> None:
    with pytest.raises(ValidationError, match=r"edge_types\[1\]"):
        memory.traverse("Node A", edge_types=["semantic", "sematic"])


# Valid time (item 12) ------------------------------------------------------------------------


def test_an_edge_is_visible_only_inside_its_valid_interval(memory: Memory) -> None:
    memory.assert_fact(**edge("Node A", "links", "Node B"), valid_from=year(2020))
    [ab] = memory.facts_about("Node A")
    memory.retract(ab.fact_id, valid_until=year(2021))

    def visible(at: datetime) -> bool:
        return bool(memory.edges_at_timestamp("Node A", at))

    assert visible(year(2020, 6))
    assert not visible(year(2019))
    assert not visible(year(2026))


def test_valid_from_is_inclusive_and_valid_until_exclusive(memory: Memory) -> None:
    start, end = "2025-06-01 00:00:00", "2026-06-01 00:00:00"
    memory.assert_fact(**edge("Node A", "links", "Node B"), valid_from=year(2025, 6))
    [ab] = memory.facts_about("Node A", valid_at=start)  # not current yet: the clock is 2024
    memory.retract(ab.fact_id, valid_until=year(2026, 6))

    assert memory.edges_at_timestamp("Node A", start)
    assert not memory.edges_at_timestamp("Node A", end)
    assert memory.edges_at_timestamp("Node A", "2026-05-31 23:59:59")


def test_an_open_edge_is_visible_far_ahead_and_a_future_one_is_not_yet(memory: Memory) -> None:
    memory.assert_fact(**edge("Node A", "links", "Node B"), valid_from=year(2020))
    memory.assert_fact(**edge("Node A", "plans", "Node C"), valid_from=year(2100))

    assert [f.object for f in memory.edges_at_timestamp("Node A", year(2099))] == ["Node B"]
    assert [f.object for f in memory.edges_at_timestamp("Node A", year(2026))] == ["Node B"]


# Traversal in valid time (item 13) -----------------------------------------------------------


def test_traversal_at_a_time_uses_the_edges_valid_then(memory: Memory) -> None:
    memory.assert_fact(**edge("Node A", "links", "Node B"), valid_from=year(2019))
    bc = memory.assert_fact(**edge("Node B", "links", "Node C"), valid_from=year(2020))
    memory.retract(bc.fact_id, valid_until=year(2021))

    assert "Node C" not in names(memory, "Node A", valid_at=year(2026))
    then = memory.bfs_at_timestamp("Node A", at=year(2020, 6))
    assert "Node C" in {e.name for e in then.entities}


def test_a_reversed_edge_is_traversed_from_its_object(memory: Memory) -> None:
    memory.assert_fact(**edge("Node B", "links", "Node A"), valid_from=year(2019))

    assert names(memory, "Node A", valid_at=year(2020)) == {"Node A", "Node B"}


def test_an_ended_edge_blocks_what_lies_behind_it(memory: Memory) -> None:
    ab = memory.assert_fact(**edge("Node A", "links", "Node B"), valid_from=year(2019))
    memory.assert_fact(**edge("Node B", "links", "Node C"), valid_from=year(2019))
    memory.retract(ab.fact_id, valid_until=year(2020))

    assert names(memory, "Node A", valid_at=year(2022)) == {"Node A"}


# Edge history (item 14) ----------------------------------------------------------------------


def test_edge_history_lists_every_version_newest_first(memory: Memory) -> None:
    memory.assert_fact(**job("Acme", year(2020)))
    memory.assert_fact(**job("Globex", year(2022)))

    versions = memory.edge_history(subject="Alice", relation="works at")

    assert [(v.object, v.valid_until) for v in versions] == [
        ("Globex", None),
        ("Acme", year(2022)),
    ]


def test_edge_history_filters_by_relation_through_the_ontology(memory: Memory) -> None:
    memory.assert_fact(**job("Acme", year(2020)))
    memory.assert_fact(**job("Globex", year(2022)))

    assert len(memory.edge_history(subject="Alice", relation="employed_by")) == 2
    assert memory.edge_history(subject="Alice", relation="lives_in") == []


def test_edge_history_keeps_the_newest_within_its_limit(memory: Memory) -> None:
    memory.assert_facts([job(f"Company {i}", year(2020 + i)) for i in range(5)])

    versions = memory.edge_history(subject="Alice", relation="works_at", limit=2)

    assert [v.object for v in versions] == ["Company 4", "Company 3"]


def test_edge_history_shows_withdrawn_versions_as_withdrawn(memory: Memory) -> None:
    ref = memory.assert_fact(**job("Acme", year(2020)))
    memory.retract(ref.fact_id)

    [version] = memory.edge_history(subject="Alice", relation="works_at")

    assert version.standing == "withdrawn"
    assert memory.facts_about("Alice") == []


# Two time axes -------------------------------------------------------------------------------


def test_known_at_shows_what_the_store_believed_before_a_supersession(
    memory: Memory, clock: Callable[[], datetime]
) -> None:
    memory.assert_fact(**job("Acme", year(2020)))
    before = clock()
    memory.assert_fact(**job("Globex", year(2022)))

    then = memory.as_of(known_at=before)

    assert [(f.object, f.valid_until) for f in then.facts_about("Alice")] == [("Acme", None)]
    assert [f.object for f in then.facts_about("Alice", valid_at=year(2023))] == ["Acme"]
    assert [f.object for f in memory.facts_about("Alice", valid_at=year(2023))] == ["Globex"]
    assert [f.object for f in memory.facts_about("Alice", valid_at=year(2021))] == ["Acme"]


def test_known_at_before_an_entity_existed_knows_nothing_of_it(
    memory: Memory, clock: Callable[[], datetime]
) -> None:
    before = clock()
    memory.assert_fact(**job("Acme", year(2020)))

    assert memory.as_of(known_at=before).facts_about("Alice") == []
    assert memory.as_of(known_at=before).entities("Alice") == []


def test_a_reinforcement_changes_confidence_from_its_own_transaction_time(
    memory: Memory, clock: Callable[[], datetime]
) -> None:
    memory.assert_fact(**job("Acme", year(2020), confidence=0.5))
    before = clock()
    memory.assert_fact(**job("Acme", year(2020), confidence=0.9))

    [now] = memory.facts_about("Alice")
    [then] = memory.as_of(known_at=before).facts_about("Alice")

    assert (now.confidence, then.confidence) == (0.9, 0.5)
    assert now.fact_id == then.fact_id


def test_a_late_fact_with_an_earlier_valid_time_fills_the_past_only(memory: Memory) -> None:
    memory.assert_fact(**job("Globex", year(2022)))
    memory.assert_fact(**job("Initech", year(2018)))

    assert [f.object for f in memory.facts_about("Alice")] == ["Globex"]
    assert [f.object for f in memory.facts_about("Alice", valid_at=year(2019))] == ["Initech"]


def test_a_single_valued_slot_has_one_version_at_any_valid_time(memory: Memory) -> None:
    for employer, since in [("Acme", 2020), ("Globex", 2022), ("Initech", 2018), ("Hooli", 2021)]:
        memory.assert_fact(**job(employer, year(since)))

    for probe in range(2017, 2026):
        assert len(memory.facts_about("Alice", valid_at=year(probe, 7))) == (probe >= 2018)


def test_a_naive_time_is_refused_with_an_accepted_form(memory: Memory) -> None:
    with pytest.raises(ValidationError, match="2024-06-01 12:00:00"):
        memory.facts_about("Alice", valid_at="2024-06-01T12:00:00")
    with pytest.raises(ValidationError, match="naive"):
        memory.as_of(known_at=datetime(2024, 1, 1))


# Entity lookup -------------------------------------------------------------------------------


def test_lookup_is_exact_and_case_insensitive_then_by_prefix(memory: Memory) -> None:
    memory.assert_facts([edge("Alice", "knows", "Alicia"), edge("Alicia", "knows", "Bob Stone")])

    assert [e.name for e in memory.entities("ALICE")] == ["Alice"]
    assert [e.name for e in memory.entities("ali")] == ["Alice", "Alicia"]
    assert memory.entities("zebra") == []
    assert memory.facts_about("zebra") == []


def test_an_alias_finds_its_entity_and_its_facts(memory: Memory) -> None:
    memory.assert_fact(subject="Rust", subject_type="language", relation="uses", object="cargo")
    memory.add_alias(entity="Rust", entity_type="language", alias="rust-lang")

    [found] = memory.entities("RUST-LANG")

    assert found.name == "Rust"
    assert found.aliases == ["Rust", "rust-lang"]
    assert [f.object for f in memory.facts_about("rust-lang")] == ["cargo"]


def test_a_merged_entity_s_facts_count_for_the_entity_it_merged_into(memory: Memory) -> None:
    memory.assert_facts(
        [
            edge("Robert Smith", "works_at", "Acme", subject_type="person"),
            edge("Bob Smith", "uses", "Vim", subject_type="person"),
        ]
    )
    memory.merge(source="Bob Smith", target="Robert Smith", entity_type="person")

    [found] = memory.entities("bob smith")

    assert found.name == "Robert Smith"
    assert sorted(f.object or "" for f in memory.facts_about("Robert Smith")) == ["Acme", "Vim"]


# Replay, rebuild, diff, history ---------------------------------------------------------------


def test_replay_answers_as_the_store_did_and_refuses_writes(
    memory: Memory, clock: Callable[[], datetime], tmp_path: Path
) -> None:
    memory.assert_fact(**job("Acme", year(2020)))
    before = clock()
    memory.assert_fact(**job("Globex", year(2022)))

    with memory.replay(until=before, into=tmp_path / "past") as past:
        assert [f.object for f in past.facts_about("Alice")] == ["Acme"]
        assert past.verify().ok
        with pytest.raises(ApexmemError, match="read-only"):
            past.assert_fact(**job("Hooli", year(2023)))


def test_replay_refuses_a_directory_that_is_not_empty(memory: Memory, tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "keep.txt").write_text("mine")

    with pytest.raises(ValidationError, match="not an empty directory"):
        memory.replay(until=memory.log.last_position(), into=target)
    assert [p.name for p in target.iterdir()] == ["keep.txt"]


def test_rebuild_gives_the_same_tables(memory: Memory) -> None:
    memory.assert_fact(**job("Acme", year(2020)))
    memory.assert_fact(**job("Globex", year(2022)))
    memory.record_message(episode="conv-1", speaker="user", text="hello", at=year(2024))
    with memory.store.read() as connection:
        before = dump(connection)

    memory.rebuild()

    with memory.store.read() as connection:
        assert dump(connection) == before


def test_the_runner_steps_over_gaps_in_positions(memory: Memory) -> None:
    memory.assert_facts([edge(f"Node {i}", "links", "Hub") for i in range(5)])
    memory.rebuild()
    assert isinstance(memory.log, EventLog)
    with sqlite3.connect(memory.log.path) as raw:
        raw.execute("DELETE FROM stored_events WHERE rowid = 3")
    memory.rebuild()

    assert memory.stats().projection_lag == 0
    assert memory.projections.position() == memory.log.last_position()


def test_diff_lists_what_changed_between_two_times(
    memory: Memory, clock: Callable[[], datetime]
) -> None:
    ref = memory.assert_fact(**job("Acme", year(2020)))
    start = clock()
    memory.assert_fact(**job("Globex", year(2022)))
    memory.retract(ref.fact_id)
    end = clock()

    changes = memory.diff(start, end)

    assert [(c.object, c.detail) for c in changes.asserted] == [("Globex", "superseded")]
    assert [c.object for c in changes.superseded] == ["Acme"]
    assert [(c.object, c.valid_until) for c in changes.retracted] == [("Acme", None)]
    with pytest.raises(ValidationError, match="before since"):
        memory.diff(end, start)


def test_entity_history_holds_its_facts_and_names(memory: Memory) -> None:
    memory.assert_fact(**job("Acme", year(2020)), actor="agent-7", episode="conv-1")
    memory.add_alias(entity="Alice", entity_type="person", alias="Ali")

    entries = memory.history(entity="alice")

    tags = [e.tag for e in entries]
    assert "fact-asserted.v1" in tags
    assert tags.count("alias-claimed.v1") == 2
    assert all(e.chain for e in entries)
    assert {e.actor for e in entries if e.tag == "fact-asserted.v1"} == {"agent-7"}


def test_stats_count_versions_states_and_current_facts(memory: Memory) -> None:
    memory.assert_fact(**job("Acme", year(2020)))
    memory.assert_fact(**job("Globex", year(2022)))

    stats = memory.stats()

    assert (stats.graph.fact_versions, stats.graph.fact_states, stats.graph.current_facts) == (
        2,
        3,
        1,
    )
    assert stats.events == memory.log.last_position()
    assert stats.projection_lag == 0
    assert timedelta(0) <= timedelta(microseconds=stats.log_bytes)


def test_activation_spreads_over_the_read_model_s_believed_edges(memory: Memory) -> None:
    memory.assert_facts([edge("Node A", "links", "Node B"), edge("Node B", "links", "Node C")])
    [start] = memory.entities("Node A")

    with memory.store.read() as connection:
        result = spread(
            {start.entity_id.hex: 1.0},
            lambda ids: activation_edges(connection, ids),
            ActivationParams(),
            now=year(2025),
        )

    assert [round(a.activation, 4) for a in result.nodes] == [1.0, 0.85, 0.7225]
    assert len(result.facts) == 2
