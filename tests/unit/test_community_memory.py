"""Communities through the Memory facade: detection recorded as events, assignment by vote,
summaries asked only for what changed, replayed without asking again, and the seed cap.

Cases from the reference (digest section 7, items 17 and 23) where it has them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from apexmem import (
    ApexmemError,
    CommunityDraft,
    ConcurrencyError,
    Memory,
    Settings,
    parse_settings,
)
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events import CommunityDissolved, CommunityMemberAssigned, CommunitySummarized
from apexmem.readmodels.recall import communities_of
from apexmem.service import upkeep as upkeep_module

COMMUNITY_TAGS = [
    "community-summarized.v1",
    "community-dissolved.v1",
    "community-member-assigned.v1",
]


class CountingSummarizer:
    """A fake model: says which community it was asked about and remembers every request."""

    name = "counting.v1"

    def __init__(self) -> None:
        self.asked: list[CommunityDraft] = []

    def summarize(self, draft: CommunityDraft) -> str:
        self.asked.append(draft)
        return f"about {draft.name}"


class FailingSummarizer:
    """A fake model that is down."""

    name = "failing.v1"

    def summarize(self, draft: CommunityDraft) -> str:
        raise TimeoutError(f"no answer about {draft.name}")


class RecordingLogger:
    """Stands in for the structlog logger of apexmem.service.upkeep and keeps what it was told."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str, dict[str, Any]]] = []

    def _record(self, level: str) -> Callable[..., None]:
        def log(event: str, **values: Any) -> None:
            self.records.append((level, event, values))

        return log

    def __getattr__(self, level: str) -> Callable[..., None]:
        return self._record(level)


def link(a: str, b: str, relation: str = "knows", **extra: Any) -> dict[str, Any]:
    return {
        "subject": a,
        "subject_type": "person",
        "relation": relation,
        "object": b,
        "object_type": "person",
        **extra,
    }


def id_of(memory: Memory, name: str) -> Any:
    return memory.entities(name, entity_type="person")[0].entity_id


def community_events(memory: Memory) -> list[str]:
    return [e.tag for e in memory.events(tags=COMMUNITY_TAGS)]


@pytest.fixture
def logger(monkeypatch: pytest.MonkeyPatch) -> RecordingLogger:
    fake = RecordingLogger()
    monkeypatch.setattr(upkeep_module, "_logger", fake)
    return fake


def open_with(tmp_path: Path, clock: Callable[[], datetime], settings: Settings) -> Memory:
    return Memory.open(
        tmp_path / "other", settings=settings, clock=clock, embedder=HashingEmbedder()
    )


def test_a_chain_is_one_community_recorded_with_its_summary(memory: Memory) -> None:
    memory.assert_facts([link("Alice", "Bob"), link("Bob", "Carol")])
    memory.observe_entity(name="Dave", entity_type="person")
    counting = CountingSummarizer()

    done = memory.detect_communities(summarizer=counting)

    assert (done.communities, done.formed, done.unchanged, done.dissolved) == (1, 1, 0, 0)
    [row] = memory.communities()
    assert (row.name, row.size, row.summary, row.summarizer) == (
        "Alice, Bob, Carol [0]",
        3,
        "about Alice, Bob, Carol [0]",
        "counting.v1",
    )
    assert [m.name for m in row.top_members] == ["Bob", "Alice", "Carol"]
    [event] = memory.events(tags=["community-summarized.v1"])
    assert isinstance(event.data, CommunitySummarized)
    assert event.data.fingerprint == row.fingerprint


def test_a_second_detection_with_nothing_changed_asks_nothing_and_writes_nothing(
    memory: Memory,
) -> None:
    memory.assert_facts([link("Alice", "Bob"), link("Bob", "Carol")])
    counting = CountingSummarizer()
    memory.detect_communities(summarizer=counting)
    before = memory.log.last_position()

    again = memory.detect_communities(summarizer=counting)

    assert (again.formed, again.unchanged) == (0, 1)
    assert len(counting.asked) == 1
    assert memory.log.last_position() == before


def test_a_new_edge_inside_a_community_asks_for_one_summary_and_replaces_it(
    memory: Memory,
) -> None:
    memory.assert_facts([link("Alice", "Bob"), link("Bob", "Carol")])
    counting = CountingSummarizer()
    first = memory.detect_communities(summarizer=counting)

    memory.assert_fact(**link("Bob", "Alice", "r2"))
    second = memory.detect_communities(summarizer=counting)

    assert len(counting.asked) == 2
    assert (first.communities, second.formed, second.dissolved, second.communities) == (1, 1, 1, 1)
    assert len(counting.asked[-1].facts) == 3
    assert community_events(memory) == [
        "community-summarized.v1",
        "community-dissolved.v1",
        "community-summarized.v1",
    ]


def test_retracting_the_only_edge_dissolves_the_community(memory: Memory) -> None:
    only = memory.assert_fact(**link("Alice", "Bob"))
    memory.detect_communities()

    memory.retract(only.fact_id)
    done = memory.detect_communities()

    assert (done.dissolved, done.communities) == (1, 0)
    assert memory.communities() == []
    with memory.store.read() as connection:
        assert communities_of(connection, [only.subject_id]) == {}
    [event] = memory.events(tags=["community-dissolved.v1"])
    assert isinstance(event.data, CommunityDissolved)


def test_edges_read_one_at_a_time_give_the_same_communities(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    one_by_one, warnings = parse_settings("[memory.graph]\nlpa_edge_chunk_size = 1\n")
    with open_with(tmp_path, clock, one_by_one) as memory:
        memory.assert_facts([link("Anna", "Bert"), link("Bert", "Cleo"), link("Dora", "Emil")])

        done = memory.detect_communities()

        assert warnings == []
        assert (done.communities, done.edges) == (2, 3)
        assert sorted(c.size for c in memory.communities()) == [2, 3]


def test_a_chunk_size_of_zero_falls_back_to_ten_thousand_with_a_warning(
    tmp_path: Path, clock: Callable[[], datetime], logger: RecordingLogger
) -> None:
    defaults = Settings()
    graph = msgspec.structs.replace(defaults.memory.graph, lpa_edge_chunk_size=0)
    zero = msgspec.structs.replace(
        defaults, memory=msgspec.structs.replace(defaults.memory, graph=graph)
    )
    parsed, warnings = parse_settings("[memory.graph]\nlpa_edge_chunk_size = 0\n")
    with open_with(tmp_path, clock, zero) as memory:
        memory.assert_facts([link("Anna", "Bert")])

        done = memory.detect_communities()

    assert done.communities == 1
    assert ("warning", "communities.chunk_size_defaulted") in [(r[0], r[1]) for r in logger.records]
    assert parsed.memory.graph.lpa_edge_chunk_size == 10_000
    assert warnings == ["memory.graph.lpa_edge_chunk_size = 0 falls back to 10000"]


def test_communities_of_maps_members_to_their_community_and_leaves_others_out(
    memory: Memory,
) -> None:
    memory.assert_facts([link("Alice", "Bob")])
    memory.observe_entity(name="Carol", entity_type="person")
    memory.detect_communities()
    a, b, c = (id_of(memory, n) for n in ("Alice", "Bob", "Carol"))
    [row] = memory.communities()

    with memory.store.read() as connection:
        found = communities_of(connection, [a, b, c])

    assert found == {a: row.community_id, b: row.community_id}


def test_an_entity_with_edges_into_a_community_is_assigned_and_its_summary_goes_stale(
    memory: Memory,
) -> None:
    memory.assert_facts([link("Alice", "Bob"), link("Bob", "Carol")])
    counting = CountingSummarizer()
    memory.detect_communities(summarizer=counting)
    memory.assert_facts([link("Dave", "Alice"), link("Dave", "Bob")])
    [before] = memory.communities()

    done = memory.assign_communities()

    [placed] = done.placed
    assert (placed.entity_id, placed.community_id) == (id_of(memory, "Dave"), before.community_id)
    assert (placed.votes, placed.cast) == (2, 2)
    [after] = memory.communities()
    assert (after.size, after.stale, after.summary) == (4, True, before.summary)
    [event] = memory.events(tags=["community-member-assigned.v1"])
    assert isinstance(event.data, CommunityMemberAssigned)
    redone = memory.detect_communities(summarizer=counting)
    assert (redone.formed, len(counting.asked)) == (1, 2)
    assert [c.stale for c in memory.communities()] == [False]


def test_a_loner_is_not_assigned(memory: Memory) -> None:
    memory.assert_facts([link("Alice", "Bob"), link("Erin", "Frank")])
    memory.detect_communities()
    memory.observe_entity(name="Loner", entity_type="person")

    done = memory.assign_communities()

    assert done.placed == []
    assert community_events(memory).count("community-member-assigned.v1") == 0


def test_a_rebuild_projects_the_recorded_summaries_without_asking_again(memory: Memory) -> None:
    memory.assert_facts([link("Alice", "Bob"), link("Bob", "Carol"), link("Dora", "Emil")])
    counting = CountingSummarizer()
    memory.summarizer = counting
    memory.detect_communities()
    memory.assert_fact(**link("Fred", "Dora"))
    memory.assign_communities()
    before = memory.communities()

    memory.rebuild()

    assert memory.communities() == before
    assert len(counting.asked) == 2


def test_a_failing_summarizer_leaves_an_empty_summary_and_a_warning(
    memory: Memory, logger: RecordingLogger
) -> None:
    memory.assert_facts([link("Alice", "Bob")])

    done = memory.detect_communities(summarizer=FailingSummarizer())

    [row] = memory.communities()
    assert (done.formed, row.summary, row.summarizer) == (1, "", "failing.v1")
    assert [r[1] for r in logger.records if r[0] == "warning"] == ["communities.summary_failed"]


def test_a_prompt_budget_of_zero_records_no_summary_and_asks_nothing(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    silent, _ = parse_settings("[memory.graph]\ncommunity_summary_max_prompt_bytes = 0\n")
    counting = CountingSummarizer()
    with open_with(tmp_path, clock, silent) as memory:
        memory.assert_facts([link("Alice", "Bob")])

        done = memory.detect_communities(summarizer=counting)

        [row] = memory.communities()
    assert (done.summarizer, row.summary, row.summarizer, counting.asked) == (
        "none",
        "",
        "none",
        [],
    )


def test_a_replayed_memory_refuses_to_detect(memory: Memory, tmp_path: Path) -> None:
    memory.assert_facts([link("Alice", "Bob")])
    with memory.replay(until=memory.log.last_position(), into=tmp_path / "past") as past:
        with pytest.raises(ApexmemError, match="read-only"):
            past.detect_communities()
        with pytest.raises(ApexmemError, match="read-only"):
            past.assign_communities()


def test_stats_count_the_live_communities(memory: Memory) -> None:
    memory.assert_facts([link("Alice", "Bob"), link("Dora", "Emil")])
    assert memory.stats().graph.communities == 0

    memory.detect_communities()

    assert memory.stats().graph.communities == 2


def test_a_merged_entity_brings_its_edges_to_the_entity_it_was_merged_into(
    memory: Memory,
) -> None:
    memory.assert_facts([link("Alice", "Bob"), link("Robert", "Carol")])
    memory.merge(source="Robert", target="Bob", entity_type="person")

    memory.detect_communities()

    [row] = memory.communities()
    assert row.size == 3
    assert sorted(m.name for m in row.top_members) == ["Alice", "Bob", "Carol"]


def test_the_seed_community_cap_keeps_three_seeds_of_one_community(memory: Memory) -> None:
    members = [f"Node {word}" for word in ("one", "two", "three", "four", "five")]
    memory.assert_facts(
        [link(a, b) for a, b in itertools.pairwise(members)]
        + [link("Node hub", m) for m in members]
    )
    uncapped = memory.recall("node", limit=10)

    memory.detect_communities()
    capped = memory.recall("node", limit=10)

    assert len(uncapped.seeds) > 3
    assert len(capped.seeds) == 3


def test_a_replay_shows_the_communities_recorded_by_then(memory: Memory, tmp_path: Path) -> None:
    memory.assert_facts([link("Alice", "Bob")])
    memory.detect_communities()
    moment = memory.log.last_position()
    memory.assert_facts([link("Dora", "Emil")])
    memory.detect_communities()

    with memory.replay(until=moment, into=tmp_path / "past") as past:
        assert [c.name for c in past.communities()] == ["Alice, Bob [0]"]
    assert len(memory.communities()) == 2


def test_a_detection_that_meets_a_conflict_decides_again_without_asking_twice(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.assert_facts([link("Alice", "Bob")])
    counting = CountingSummarizer()
    locked = memory.log.locked
    tries: list[int] = []

    def conflicting_once() -> Any:
        tries.append(len(tries) + 1)
        if len(tries) == 1:
            raise ConcurrencyError("community stream moved meanwhile")
        return locked()

    monkeypatch.setattr(memory.log, "locked", conflicting_once)

    done = memory.detect_communities(summarizer=counting)

    assert (tries, done.communities, len(counting.asked)) == ([1, 2], 1, 1)
