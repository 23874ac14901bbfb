"""Recall through the Memory facade: lists, graph expansion, fusion, time axes, usage, bad input.

Real SQLite, FTS5 and FAISS; the hashing embedder stands in for WordLlama (deterministic).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from apexmem import Memory, ValidationError, parse_settings
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events import FactsRetrieved
from apexmem.readmodels.recall import retrieval_counts
from apexmem.service.recall import Recaller


def year(value: int) -> datetime:
    return datetime(value, 1, 1, tzinfo=UTC)


def edge(subject: str, relation: str, obj: str, **extra: Any) -> dict[str, Any]:
    return {"subject": subject, "relation": relation, "object": obj, **extra}


@pytest.fixture
def team(memory: Memory) -> Memory:
    """Alice is in the platform team; the team uses Rust and Kafka; Rust builds with cargo."""
    memory.assert_facts(
        [
            edge("Alice", "member_of", "Platform Team", subject_type="person"),
            edge("Platform Team", "uses", "Rust", fact="The platform team writes Rust"),
            edge("Platform Team", "uses", "Kafka", fact="The platform team streams with Kafka"),
            edge("Rust", "builds_with", "cargo", edge_type="entity", confidence=0.95),
            edge("Outage", "caused", "Rollback", edge_type="causal"),
            edge("Bob", "likes", "Pizza", subject_type="person"),
        ]
    )
    memory.record_message(
        episode="chat-1", speaker="user", text="Alice moved to the platform team", ref="D1:1"
    )
    return memory


def fact_texts(found: Any) -> list[str]:
    return [h.text for h in found if h.kind == "fact"]


def test_a_recall_gives_facts_and_messages_best_first_with_why_and_provenance(
    team: Memory,
) -> None:
    found = team.recall("What does the platform team use?", limit=10)
    assert found.hits, "the team's facts should be recalled"
    scores = [h.score for h in found]
    assert scores == sorted(scores, reverse=True)
    assert found.seeds[0] == "Platform Team"
    top = found[0]
    assert top.kind == "fact" and "platform team" in top.text.lower()
    assert any(w.startswith("full text #") for w in top.why)
    assert any(w.startswith("graph: an edge of Platform Team") for w in top.why)
    assert top.provenance.positions and top.fact is not None
    message = next(h for h in found if h.kind == "message")
    assert (message.provenance.ref, message.provenance.episode) == ("D1:1", "chat-1")
    assert message.provenance.actor == "user"


def test_a_fact_two_hops_from_the_named_entity_is_found_through_the_graph(team: Memory) -> None:
    found = team.recall("Alice", max_hops=2, edge_types=["semantic"], limit=10)
    kafka = next(h for h in found if h.text == "The platform team streams with Kafka")
    assert "graph: 1 hop from Alice (semantic, 0.44)" in kafka.why
    shallow = team.recall("Alice", max_hops=0, edge_types=["semantic"], limit=10)
    assert all(not w.startswith("graph") for h in shallow for w in h.why)


def test_spreading_activation_reaches_neighbours_too(team: Memory) -> None:
    found = team.recall("Alice", mode="activation", max_hops=2, limit=10)
    walked = {h.text: h.why for h in found}
    assert any(w.startswith("activation ") for w in walked["Alice member_of Platform Team"])
    assert any(w.startswith("activation ") for w in walked["The platform team writes Rust"])


@pytest.mark.parametrize(
    ("hops", "reached"), [(1, ["Bobcat"]), (3, ["Bobcat", "Cheetah", "Dingo"])]
)
def test_the_activation_walks_as_deep_as_its_own_setting(
    tmp_path: Path, clock: Callable[[], datetime], hops: int, reached: list[str]
) -> None:
    settings, _ = parse_settings(
        f"[memory.vectors]\nenabled = false\n[memory.graph]\nmax_hops = 2\n"
        f"[memory.graph.spreading_activation]\nenabled = true\nmax_hops = {hops}\n"
    )
    chain = ["Aardvark", "Bobcat", "Cheetah", "Dingo", "Emu"]
    with Memory.open(tmp_path, settings=settings, clock=clock) as mem:
        mem.assert_facts([edge(a, "links", b) for a, b in pairwise(chain)])

        found = mem.recall("Aardvark", edge_types=[])

    assert sorted(str(h.fact.object) for h in found if h.fact is not None) == reached


def walk_score(hit: Any) -> float:
    """The score the graph walk gave a hit (its `why`: "graph: ... (type, 0.44)" or
    "activation 0.44 over ..."), 0 when the walk left it out."""
    for why in hit.why:
        if why.startswith("graph"):
            return float(why.rstrip(")").split(", ")[-1])
        if why.startswith("activation"):
            return float(why.split()[1])
    return 0.0


@pytest.mark.parametrize("mode", ["bfs", "activation"])
def test_edges_are_scored_with_their_confidence_decayed_to_the_moment_asked(
    tmp_path: Path, mode: str
) -> None:
    now = [datetime(2024, 1, 1, tzinfo=UTC)]
    settings, _ = parse_settings("[memory.vectors]\nenabled = false\n")
    with Memory.open(tmp_path, settings=settings, clock=lambda: now[0]) as mem:
        mem.assert_fact(**edge("Xavier", "uses", "Oldtool", confidence=0.9, object_type="tool"))
        asked_then = now[0]
        now[0] += timedelta(days=200)  # 0.9 decays to 0.9 * exp(-0.01 * 200), about 0.12
        mem.assert_fact(**edge("Xavier", "uses", "Newtool", confidence=0.5, object_type="tool"))

        found = mem.recall("Xavier", edge_types=[], mode=mode)
        then = mem.recall("Xavier", edge_types=[], mode=mode, known_at=asked_then)

    walked = {h.fact.object: walk_score(h) for h in found if h.fact is not None}
    assert walked["Newtool"] > walked["Oldtool"]  # 0.9 as stored would outrank 0.5
    shown = {h.fact.object: round(h.confidence, 3) for h in found if h.fact is not None}
    assert shown == {"Newtool": 0.5, "Oldtool": round(0.9 * math.exp(-2), 3)}
    assert [(h.fact.object, h.confidence) for h in then if h.fact is not None] == [("Oldtool", 0.9)]


def test_a_name_told_late_in_a_long_question_seeds_the_graph(team: Memory) -> None:
    found = team.recall("what does the platform team build quickly everywhere today with cargo")

    assert {"Platform Team", "cargo"} <= set(found.seeds)


def test_an_explicit_edge_type_list_restricts_every_fact(team: Memory) -> None:
    found = team.recall("Rust platform outage rollback cargo", edge_types=["causal"], limit=10)
    kinds = {h.fact.edge_type for h in found if h.fact is not None}
    assert kinds == {"causal"}
    assert found.edge_types == ["causal"]


def test_the_router_picks_the_walked_types_from_keywords(team: Memory) -> None:
    assert team.recall("why the outage").edge_types == ["causal", "semantic"]
    assert team.recall("the outage").edge_types == ["semantic"]
    assert team.recall("the outage", edge_types=[]).edge_types == []


@pytest.mark.parametrize("query", ["", "   ", "?!...", '"*():^'])
def test_an_empty_or_punctuation_only_query_recalls_nothing(team: Memory, query: str) -> None:
    assert list(team.recall(query)) == []


def test_a_huge_query_is_cut_not_refused(team: Memory) -> None:
    found = team.recall("platform " * 12_000)
    assert found.hits and len("platform " * 12_000) > 100_000


def test_an_unknown_mode_or_edge_type_is_refused_naming_what_is_accepted(team: Memory) -> None:
    with pytest.raises(ValidationError, match=r"mode: 'dfs' is not one of bfs, activation"):
        team.recall("Alice", mode="dfs")
    with pytest.raises(ValidationError, match=r"edge_types\[1\]: 'bogus' is not one of semantic"):
        team.recall("Alice", edge_types=["causal", "bogus"])
    with pytest.raises(ValidationError, match="edge_types: 'causal' is not a list of edge types"):
        team.recall("Alice", edge_types="causal")
    with pytest.raises(ValidationError, match="limit: -1 is not a count"):
        team.recall("Alice", limit=-1)
    assert list(team.recall("Alice", limit=0)) == []


def test_a_limit_caps_the_hits(team: Memory) -> None:
    assert len(team.recall("platform team Rust Kafka Alice", limit=2)) == 2


def test_recall_inside_a_past_state_on_both_time_axes(memory: Memory) -> None:
    job: dict[str, Any] = {"subject": "Alice", "subject_type": "person", "relation": "works_at"}
    memory.assert_fact(**job, object="Acme", object_type="organization", valid_from=year(2020))
    learned = memory.facts_about("Alice")[0].recorded_at
    memory.assert_fact(**job, object="Globex", object_type="organization", valid_from=year(2023))

    def employers(**when: Any) -> list[str]:
        return sorted(
            h.fact.object or "" for h in memory.recall("Alice works", **when) if h.fact is not None
        )

    assert employers() == ["Globex"]
    assert employers(valid_at=year(2021)) == ["Acme"]
    assert employers(known_at=learned) == ["Acme"]
    assert employers(known_at=learned - timedelta(microseconds=1)) == []
    assert employers(valid_at="2024-06-01 00:00:00") == ["Globex"]


def test_a_message_is_recalled_only_once_said_and_recorded(memory: Memory) -> None:
    memory.record_message(episode="c", speaker="user", text="Kafka is down", at=year(2024))
    assert [h.text for h in memory.recall("kafka")] == ["Kafka is down"]
    assert list(memory.recall("kafka", valid_at=year(2023))) == []
    assert list(memory.recall("kafka", known_at=year(2000))) == []


def test_each_recall_records_one_usage_event_that_feeds_retrieval_counts(team: Memory) -> None:
    first = team.recall("platform team", limit=3)
    second = team.recall("platform team", limit=3)
    team.close()  # appends the usage held back for batching
    reopened = Memory.open(team.directory, embedder=HashingEmbedder())
    used = [e.data for e in reopened.events(tags=["facts-retrieved.v1"])]
    assert [u.fact_ids for u in used if isinstance(u, FactsRetrieved)] == [
        [h.item_id for h in first if h.kind == "fact"],
        [h.item_id for h in second if h.kind == "fact"],
    ]
    reopened.project()
    with reopened.store.read() as connection:
        counts = retrieval_counts(connection, [h.item_id for h in first])
    assert counts == {h.item_id: 2.0 for h in first if h.kind == "fact"}
    reopened.close()


def test_usage_recording_can_be_turned_off(tmp_path: Path, clock: Callable[[], datetime]) -> None:
    settings, _ = parse_settings("[memory.recall]\nrecord_usage = false\n")
    with Memory.open(tmp_path, settings=settings, clock=clock, embedder=HashingEmbedder()) as mem:
        mem.assert_fact(subject="Alice", relation="uses", object="Rust")
        assert mem.recall("Alice").hits
        before = mem.log.last_position()
    with Memory.open(tmp_path, settings=settings, clock=clock, embedder=HashingEmbedder()) as mem:
        assert mem.log.last_position() == before


def test_usage_is_appended_with_the_next_write_in_one_append(team: Memory) -> None:
    team.recall("platform team")
    ref = team.assert_fact(subject="Carol", relation="uses", object="Golang")
    appended = list(team.events(start=ref.position))
    tags = [e.tag for e in appended]
    assert tags.index("fact-asserted.v1") < tags.index("facts-retrieved.v1")
    assert len({e.recorded_at for e in appended}) == 1  # one append: one transaction time


def _late_after(monkeypatch: pytest.MonkeyPatch, step: str) -> list[BaseException | None]:
    """The recall's clock jumps an hour once `step` starts; what the step raised is kept."""
    now = [0.0]
    monkeypatch.setattr("apexmem.service.recall.monotonic", lambda: now[0])
    original = getattr(Recaller, step)
    raised: list[BaseException | None] = []

    def late(*args: Any, **kwargs: Any) -> Any:
        now[0] = 3_600.0
        try:
            result = original(*args, **kwargs)
        except BaseException as error:
            raised.append(error)
            raise
        raised.append(None)
        return result

    monkeypatch.setattr(Recaller, step, late)
    return raised


def test_the_time_budget_returns_what_was_found_marked_cut_short(
    team: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    _late_after(monkeypatch, "_full_text")  # past the budget once the full text is done
    found = team.recall("platform team", limit=5)
    assert found.cut_short
    assert found.hits and all(w.startswith("full text") for h in found for w in h.why)


def test_a_statement_running_past_the_budget_is_stopped(
    team: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's progress handler stops the seed query itself, not only the steps after it."""
    monkeypatch.setattr("apexmem.readmodels.store.PROGRESS_STEPS", 1)
    raised = _late_after(monkeypatch, "_seeds")
    found = team.recall("What does the platform team use?", limit=5)
    assert found.cut_short and found.seeds == []
    assert len(raised) == 1 and "interrupted" in str(raised[0])
    assert found.hits and not any(w.startswith("graph") for h in found for w in h.why)
    assert team.recall("What does the platform team use?", limit=5).seeds  # nothing left behind


def test_facts_are_deduplicated_by_subject_relation_object_and_edge_type(team: Memory) -> None:
    found = team.recall("platform team Rust Kafka cargo Alice", limit=20)
    keys = [
        (h.fact.subject_id, h.fact.relation, h.fact.object, h.fact.edge_type)
        for h in found
        if h.fact is not None
    ]
    assert len(keys) == len(set(keys))


def test_format_context_renders_lines_within_the_budget(memory: Memory) -> None:
    memory.assert_fact(
        subject="Rust",
        relation="uses",
        object="cargo",
        fact="Rust uses\ncargo <b>",
        confidence=0.95,
    )
    found = memory.recall("Rust cargo")
    since = found[0].fact.valid_from.date().isoformat() if found[0].fact else ""
    expected = f"- Rust uses cargo b [since {since}] (confidence: 0.95)"
    assert memory.format_context(found) == expected
    assert memory.format_context(found, budget_chars=10) == ""


def test_a_fact_and_the_message_it_came_from_count_once(memory: Memory) -> None:
    memory.record_message(episode="chat-1", speaker="Caroline", text="I went hiking", ref="D1:1")
    memory.assert_fact(
        subject="Caroline",
        subject_type="person",
        relation="observed",
        fact="Caroline went hiking",
        episode="chat-1",
        ref="D1:1",
    )
    memory.assert_fact(
        subject="Caroline",
        subject_type="person",
        relation="observed",
        fact="Caroline enjoys hiking trips",
        episode="chat-1",
        ref="D1:1",
    )
    found = memory.recall("hiking")
    assert sorted(h.kind for h in found) == ["fact", "fact"]


def test_running_text_is_matched_by_its_stem(memory: Memory) -> None:
    memory.record_message(episode="c", speaker="Mel", text="I love painting sunsets")
    assert [h.text for h in memory.recall("Has Mel painted?")] == ["I love painting sunsets"]


class SlowToLoad(HashingEmbedder):
    """The hashing embedder, with a model load of 0.3 s before its first question."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded = False

    def embed(self, texts: Sequence[str]) -> Any:
        if not self.loaded and texts == ["Where does Alice work?"]:
            time.sleep(0.3)
            self.loaded = True
        return super().embed(texts)


def test_loading_the_model_for_the_first_question_does_not_count_against_the_budget(
    tmp_path: Path,
) -> None:
    settings, _ = parse_settings("[memory.graph.spreading_activation]\nrecall_timeout_ms = 200\n")
    with Memory.open(tmp_path / "mem", settings=settings, embedder=SlowToLoad()) as memory:
        memory.assert_fact(subject="Alice", relation="works_at", object="Acme")
        found = memory.recall("Where does Alice work?")
    assert not found.cut_short
    assert [h.text for h in found] == ["Alice works_at Acme"]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [({"limit": 2**62}, "limit"), ({"max_hops": 2**63}, "max_hops"), ({"limit": 1.5}, "limit")],
)
def test_a_count_past_the_bound_is_refused_naming_it(
    team: Memory, arguments: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        team.recall("Alice", **arguments)

    assert refused.value.field == field


def test_a_context_budget_that_is_not_a_count_is_refused(team: Memory) -> None:
    with pytest.raises(ValidationError, match="budget_chars"):
        team.format_context(team.recall("Alice"), budget_chars=None)  # type: ignore[arg-type]
