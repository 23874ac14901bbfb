"""The model extractor against a local server of the chat completions protocol answering
from recorded responses: the request it sends, the facts it dates and supersedes, and how
an unreachable, slow, refusing or rambling model degrades (nothing written, or the message
read with nothing found). Replay and rebuild never call the model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import pytest
from recorded_chat import RecordedChat, recorded_chat

from apexmem import Memory, parse_settings
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.extraction import Utterance
from apexmem.domain.heuristic import HeuristicExtractor
from apexmem.events import MessageExtracted
from apexmem.extractors import (
    FAILURES_BEFORE_PAUSE,
    PAUSE_SECS,
    ChatExtractor,
    ExtractorUnavailable,
    extractor_for,
)

MODEL = "qwen2.5:7b-instruct"
T1 = datetime(2023, 3, 1, 9, 0, tzinfo=UTC)
T2 = datetime(2023, 3, 15, 18, 30, tzinfo=UTC)


def clock_from(start: datetime) -> Callable[[], datetime]:
    ticks = 0

    def now() -> datetime:
        nonlocal ticks
        ticks += 1
        return start + timedelta(milliseconds=ticks)

    return now


@pytest.fixture
def server() -> Iterator[RecordedChat]:
    with recorded_chat("priya.json", "failures.json") as chat:
        yield chat


def open_memory(path: Path, server: RecordedChat, *, extra: str = "") -> Memory:
    text = (
        f'[memory.graph]\nextract_model = "{MODEL}"\nextract_base_url = "{server.base_url}"\n'
        f"extraction_timeout_secs = 1\n{extra}"
    )
    settings, _ = parse_settings(text)
    return Memory.open(
        path,
        settings=settings,
        clock=clock_from(T2 + timedelta(days=1)),
        embedder=HashingEmbedder(),
    )


def say(memory: Memory, text: str, at: datetime = T2, speaker: str = "Priya") -> None:
    memory.record_message(episode="conv-7", speaker=speaker, text=text, at=at)


def verdicts(memory: Memory) -> list[MessageExtracted]:
    return [
        e.data
        for e in memory.events(tags=["message-extracted.v1"])
        if isinstance(e.data, MessageExtracted)
    ]


def test_the_priya_conversation_is_dated_and_lisbon_superseded_by_berlin(
    tmp_path: Path, server: RecordedChat
) -> None:
    with open_memory(tmp_path / "mem", server) as memory:
        say(memory, "I'm vegetarian and I live in Lisbon.", T1)
        say(
            memory,
            "My manager Tom Baker wants us to migrate to Snowflake.",
            T1 + timedelta(minutes=5),
        )
        say(memory, "Actually I just moved to Berlin last week.", T2)

        report = memory.backfill()

        assert (report.extractor, report.messages, report.failed) == (f"chat.v1:{MODEL}", 3, 0)
        assert server.unanswered == []
        top = memory.recall("Where does Priya live now?", limit=5)[0]
        assert top.text == "Priya lives in Berlin."
        assert top.fact is not None and top.fact.valid_from == datetime(2023, 3, 8, tzinfo=UTC)
        lived = {f.object: f for f in memory.edge_history(subject="Priya", relation="lives_in")}
        assert lived["Lisbon"].valid_until == datetime(2023, 3, 8, tzinfo=UTC)
        assert lived["Berlin"].valid_until is None
        diet = memory.recall("Is Priya vegetarian?", limit=3)
        assert "Priya is vegetarian." in [h.text for h in diet]


def test_the_model_is_shown_the_prior_turns_and_asked_for_strict_json(
    tmp_path: Path, server: RecordedChat
) -> None:
    with open_memory(tmp_path / "mem", server) as memory:
        say(memory, "I'm vegetarian and I live in Lisbon.", T1)
        say(memory, "Actually I just moved to Berlin last week.", T2)

        memory.backfill()

    first, second = server.requests
    assert first.path == "/v1/chat/completions" and first.body["model"] == MODEL
    assert first.body["response_format"]["json_schema"]["strict"] is True
    assert "Context" not in first.user_prompt()
    assert second.user_prompt().startswith(
        "Context (last 1 messages):\nPriya: I'm vegetarian and I live in Lisbon."
    )
    assert "Message time: 2023-03-15T18:30:00Z" in second.user_prompt()
    assert "Authorization" not in first.headers


def test_the_api_key_is_read_from_the_environment_variable_the_settings_name(
    server: RecordedChat, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, _ = parse_settings(
        f'[memory.graph]\nextract_model = "{MODEL}"\nextract_base_url = "{server.base_url}"\n'
        'extract_api_key_env = "APEXMEM_TEST_KEY"\n'
    )
    extractor = extractor_for(settings.memory.graph)
    monkeypatch.setenv("APEXMEM_TEST_KEY", "sk-test-123")

    extractor.extract(utterance("I'm vegetarian and I live in Lisbon."), {})

    assert extractor.name == f"chat.v1:{MODEL}"
    assert server.requests[0].headers["Authorization"] == "Bearer sk-test-123"
    monkeypatch.delenv("APEXMEM_TEST_KEY")
    with pytest.raises(ExtractorUnavailable, match="APEXMEM_TEST_KEY"):
        extractor.extract(utterance("I'm vegetarian and I live in Lisbon."), {})
    assert len(server.requests) == 1


def utterance(text: str) -> Utterance:
    return Utterance(
        message_id=UUID(int=1), conversation="conv-7", speaker="Priya", text=text, at=T1
    )


def test_without_a_model_the_built_in_extractor_reads_the_messages() -> None:
    settings, _ = parse_settings("[memory.graph]\nmax_hops = 2\n")

    assert isinstance(extractor_for(settings.memory.graph), HeuristicExtractor)


@pytest.mark.parametrize(
    "text",
    ["The server is down today.", "This answer comes too late.", "A gateway answers in HTML."],
)
def test_a_model_that_does_not_answer_leaves_the_message_to_read_again(
    tmp_path: Path, server: RecordedChat, text: str
) -> None:
    with open_memory(tmp_path / "mem", server) as memory:
        say(memory, text)

        report = memory.backfill()

        assert (report.messages, report.failed, report.pending, report.facts) == (1, 1, 1, 0)
        assert verdicts(memory) == []


@pytest.mark.parametrize(
    "text",
    [
        "The model rambles instead.",
        "The model refuses this one.",
        "The answer was cut off.",
        "The answer has the wrong shape.",
    ],
)
def test_an_answer_that_is_not_the_json_asked_for_marks_the_message_read_with_nothing_found(
    tmp_path: Path, server: RecordedChat, text: str
) -> None:
    with open_memory(tmp_path / "mem", server) as memory:
        say(memory, text)

        report = memory.backfill()

        assert (report.messages, report.failed, report.pending, report.facts) == (1, 0, 0, 0)
        [verdict] = verdicts(memory)
        assert verdict.extractor == f"chat.v1:{MODEL}" and verdict.fact_ids == []


def test_dates_the_model_gets_wrong_are_dropped_and_its_facts_kept(
    tmp_path: Path, server: RecordedChat
) -> None:
    with open_memory(tmp_path / "mem", server) as memory:
        say(memory, "Priya started at Acme Corp in some month.")

        memory.backfill()

        facts = {f.relation: f for f in memory.facts_about("Priya")}
        assert facts["works_at"].valid_from == T2
        assert facts["worked_at"].valid_from == datetime(2022, 5, 1, tzinfo=UTC)
        assert facts["worked_at"].valid_until is None


def test_the_model_extractor_keeps_to_max_entities_and_edges_per_message(
    tmp_path: Path, server: RecordedChat
) -> None:
    with open_memory(
        tmp_path / "mem", server, extra="max_entities_per_message = 4\nmax_edges_per_message = 3\n"
    ) as memory:
        say(memory, "Priya names far too many things.")

        report = memory.backfill()

        assert report.facts == 3
        schema = server.requests[0].body["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["facts"]["maxItems"] == 3


def test_rebuild_and_replay_never_call_the_model(tmp_path: Path, server: RecordedChat) -> None:
    with open_memory(tmp_path / "mem", server) as memory:
        say(memory, "I'm vegetarian and I live in Lisbon.", T1)
        say(memory, "Actually I just moved to Berlin last week.", T2)
        memory.backfill()
        asked = len(server.requests)
        before = versions(memory)

        memory.rebuild()
        replayed = memory.replay(until=memory.log.last_position(), into=tmp_path / "past")

        assert versions(memory) == before
        assert memory.backfill().messages == 0
    with replayed:
        assert versions(replayed) == before
    assert len(server.requests) == asked == 2


def versions(memory: Memory) -> list[tuple[str, datetime, datetime | None]]:
    rows = memory.edge_history(subject="Priya", relation="lives_in")
    return sorted((f.fact, f.valid_from, f.valid_until) for f in rows)


def test_with_the_rpe_gate_the_model_is_not_asked_about_turns_that_say_little_new(
    tmp_path: Path, server: RecordedChat
) -> None:
    gate = "[memory.graph.rpe]\nenabled = true\nmax_skip_turns = 5\n"
    with open_memory(tmp_path / "mem", server, extra=gate) as memory:
        say(memory, "I'm vegetarian and I live in Lisbon.", T1)
        for minutes in range(1, 5):
            say(memory, "ok, sounds good to me", T1 + timedelta(minutes=minutes))
        say(memory, "Actually I just moved to Berlin last week.", T2)

        report = memory.backfill()

        asked = [r.user_prompt().rsplit("Current message:\n", 1)[1] for r in server.requests]
        assert [a.splitlines()[0] for a in asked] == [
            "I'm vegetarian and I live in Lisbon.",
            "ok, sounds good to me",
            "Actually I just moved to Berlin last week.",
        ]
        assert (report.messages, report.gated, report.pending) == (6, 3, 0)
        assert memory.stats().graph.gated_messages == 3


README_T1 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
README_T3 = datetime(2024, 5, 20, 10, 0, tzinfo=UTC)
PRIYA = [
    {"speaker": "Priya", "text": "I'm vegetarian and I live in Lisbon.", "at": README_T1},
    {
        "speaker": "Priya",
        "text": "My manager Tom Baker wants us to migrate to Snowflake.",
        "at": README_T1 + timedelta(minutes=1),
    },
    {"speaker": "Priya", "text": "Actually I just moved to Berlin last week.", "at": README_T3},
]
"""The issue's conversation, as `add_messages` takes it."""


def test_the_conversation_added_with_add_messages_is_read_by_the_model_in_the_background(
    tmp_path: Path, server: RecordedChat
) -> None:
    settings, _ = parse_settings(
        f'[memory.graph]\nextract_model = "{MODEL}"\nextract_base_url = "{server.base_url}"\n'
    )
    clock = clock_from(README_T3 + timedelta(days=1))
    with Memory.open(tmp_path / "mem", settings=settings, clock=clock) as memory:
        memory.add_messages(episode="conv-7", messages=PRIYA)
        report = memory.extract_pending()

        assert server.unanswered == [] and len(server.requests) == 3
        assert report.pending == 0 and memory.stats().graph.unextracted_messages == 0
        first = memory.recall("Where does Priya live now?", limit=10).hits[0]
        assert first.text == "Priya lives in Berlin."
        last_week = datetime(2024, 5, 13, tzinfo=UTC)
        assert first.fact is not None and first.fact.valid_from == last_week
        lived = {f.object: f for f in memory.edge_history(subject="Priya", relation="lives_in")}
        assert (lived["Lisbon"].valid_from, lived["Lisbon"].valid_until) == (README_T1, last_week)
        top = memory.recall("Is Priya vegetarian?", limit=10).hits[:3]
        assert "Priya is vegetarian." in [h.text for h in top]
        [tom] = [f for f in memory.facts_about("Tom Baker") if f.relation == "manages"]
        assert (tom.actor, tom.episode) == (f"chat.v1:{MODEL}", "conv-7")


def test_after_failures_in_a_row_the_model_is_not_asked_until_a_pause_has_passed(
    server: RecordedChat,
) -> None:
    now = [1_000.0]
    extractor = ChatExtractor(model=MODEL, base_url=server.base_url, clock=lambda: now[0])
    down = Utterance(
        message_id=UUID(int=2),
        conversation="c",
        speaker="Priya",
        text="The server is down today.",
        at=T1,
    )

    for _ in range(FAILURES_BEFORE_PAUSE + 2):
        with pytest.raises(ExtractorUnavailable):
            extractor.extract(down, {})
    asked_while_paused = len(server.requests)
    now[0] += PAUSE_SECS
    with pytest.raises(ExtractorUnavailable, match="HTTP 500"):
        extractor.extract(down, {})

    assert asked_while_paused == FAILURES_BEFORE_PAUSE
    assert len(server.requests) == FAILURES_BEFORE_PAUSE + 1
    with pytest.raises(ExtractorUnavailable, match="not asked again"):  # paused again
        extractor.extract(utterance("I'm vegetarian and I live in Lisbon."), {})
    now[0] += PAUSE_SECS
    assert extractor.extract(utterance("I'm vegetarian and I live in Lisbon."), {}).facts
    with pytest.raises(ExtractorUnavailable, match="HTTP 500"):  # the count started again
        extractor.extract(down, {})
