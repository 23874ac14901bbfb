"""Conversation in, useful memory out (issue 26): `add_messages`, the offline extractor's
typed and dated facts, and recall answering from them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

import pytest
from clocks import Clock
from sqlalchemy import select

from apexmem import Memory, ValidationError
from apexmem.readmodels.tables import extractions

T1 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
T3 = datetime(2024, 5, 20, 10, 0, tzinfo=UTC)
LAST_WEEK = T3 - timedelta(days=7)
"""What "last week" in the third message resolves to."""
PRIYA = [
    {"speaker": "Priya", "text": "I'm vegetarian and I live in Lisbon.", "at": T1},
    {
        "speaker": "Priya",
        "text": "My manager Tom Baker wants us to migrate to Snowflake.",
        "at": T1 + timedelta(minutes=1),
    },
    {"speaker": "Priya", "text": "Actually I just moved to Berlin last week.", "at": T3},
]


UNHURRIED: Final = "[memory.graph.spreading_activation]\nrecall_timeout_ms = 60000\n"
"""A recall never cut short by its time budget (a cold first recall on a loaded machine)."""


def opened(directory: Path, clock: Clock) -> Memory:
    """A memory with default settings but an unhurried recall."""
    directory.mkdir()
    (directory / "apexmem.toml").write_text(UNHURRIED, encoding="utf-8")
    return Memory.open(directory, clock=clock)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    clock = Clock()
    clock.now = T3 + timedelta(days=1)
    with opened(tmp_path / "mem", clock) as memory:
        yield memory


def test_the_priya_conversation_answers_where_she_lives_now_with_the_dated_berlin_fact(
    memory: Memory,
) -> None:
    memory.add_messages(episode="conv-7", messages=PRIYA)
    memory.extract_pending()

    first = memory.recall("Where does Priya live now?", limit=10).hits[0]

    assert first.kind == "fact" and first.text == "Priya lives in Berlin"
    assert first.fact is not None and first.fact.valid_from == LAST_WEEK


def test_lisbon_is_superseded_where_last_week_begins(memory: Memory) -> None:
    memory.add_messages(episode="conv-7", messages=PRIYA)
    memory.extract_pending()

    [then] = [f for f in memory.facts_about("Priya", valid_at=T1) if f.relation == "lives_in"]
    [now] = [f for f in memory.facts_about("Priya") if f.relation == "lives_in"]

    assert (then.object, then.valid_from, then.valid_until) == ("Lisbon", T1, LAST_WEEK)
    assert (now.object, now.valid_from, now.valid_until) == ("Berlin", LAST_WEEK, None)


def test_is_priya_vegetarian_finds_the_fact_or_its_message_in_the_top_three(
    memory: Memory,
) -> None:
    memory.add_messages(episode="conv-7", messages=PRIYA)
    memory.extract_pending()

    top = memory.recall("Is Priya vegetarian?", limit=10).hits[:3]

    assert any("vegetarian" in hit.text for hit in top), [h.text for h in top]


def test_co_mentions_seed_the_graph_but_stay_out_of_recall_unless_asked_for(
    memory: Memory,
) -> None:
    memory.add_messages(episode="conv-7", messages=PRIYA)
    memory.extract_pending()

    plain = memory.recall("Priya Snowflake Tom Baker", limit=20)
    asked = memory.recall("Priya Snowflake Tom Baker", limit=20, include_co_mentions=True)

    assert not [h for h in plain if h.fact is not None and h.fact.relation == "mentioned_with"]
    assert [h for h in asked if h.fact is not None and h.fact.relation == "mentioned_with"]


def test_a_message_stays_in_recall_when_only_a_co_mention_was_learned_from_it(
    memory: Memory,
) -> None:
    said = "Snowflake and Databricks came up at the offsite."
    memory.add_messages(episode="conv-1", messages=[{"speaker": "Omar", "text": said}])
    memory.extract_pending()

    texts = [h.text for h in memory.recall("Snowflake Databricks offsite", limit=5)]

    assert said in texts


def test_messages_wait_for_extraction_until_extract_pending_reads_each_once(
    memory: Memory,
) -> None:
    added = memory.add_messages(episode="conv-7", messages=PRIYA, extract=False)
    waiting = memory.stats().graph.unextracted_messages

    report = memory.extract_pending()

    assert (len(added.messages), added.pending, waiting) == (3, 3, 3)
    assert (report.messages, report.pending) == (3, 0)
    assert memory.stats().graph.unextracted_messages == 0
    assert memory.extract_pending().messages == 0


def test_background_extraction_and_extract_pending_read_each_message_once(
    memory: Memory,
) -> None:
    memory.add_messages(episode="conv-7", messages=PRIYA)  # the background starts reading
    memory.extract_pending()  # takes turns with it, then reads what is left

    with memory.store.read() as connection:
        read = connection.execute(select(extractions.c.message_id)).scalars().all()
    assert len(read) == len(set(read)) == 3
    assert memory.stats().graph.unextracted_messages == 0


def test_chat_roles_and_content_are_accepted_and_the_user_becomes_an_entity(
    memory: Memory,
) -> None:
    memory.add_messages(
        episode="chat-1",
        messages=[
            {"role": "user", "content": "I work at Acme Corp and I use Neovim."},
            {"role": "assistant", "content": "I use many tools."},
        ],
    )
    memory.extract_pending()

    facts = {(f.relation, f.object) for f in memory.facts_about("User")}

    assert {("works_at", "Acme Corp"), ("uses", "Neovim")} <= facts
    assert memory.entities("assistant") == []


def test_a_backfilled_year_old_conversation_answers_questions_about_itself(
    tmp_path: Path,
) -> None:
    clock = Clock()
    clock.now = datetime(2025, 6, 1, tzinfo=UTC)  # over a year after the conversation
    said = datetime(2024, 3, 2, 18, 0, tzinfo=UTC)
    with opened(tmp_path / "mem", clock) as memory:
        memory.add_messages(
            episode="old",
            messages=[
                {"speaker": "Jon", "text": "I work at Globex since 2019.", "at": said},
                {"speaker": "Gina", "text": "I love pottery.", "at": said},
            ],
        )
        memory.extract_pending()

        top = memory.recall("Where does Jon work?", limit=3).hits[0]

    assert top.text == "Jon works at Globex"
    assert top.fact is not None and top.fact.valid_from == datetime(2019, 1, 1, tzinfo=UTC)
    assert top.confidence == pytest.approx(0.8)  # decay counts from when it was learned


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ("hello", "messages"),
        ([], "messages"),
        ([{"speaker": "Ann"}], "messages[0].text"),
        ([{"text": "hi", "mood": "good"}], "messages[0].mood"),
        (["hi"], "messages[0]"),
        ([{"text": "hi", "at": "not a time"}], "at"),
    ],
)
def test_bad_messages_are_refused_naming_the_field_and_nothing_is_written(
    memory: Memory, messages: object, field: str
) -> None:
    before = memory.log.last_position()

    with pytest.raises(ValidationError) as refused:
        memory.add_messages(episode="conv-1", messages=messages)  # type: ignore[arg-type]

    assert refused.value.field == field
    assert memory.log.last_position() == before
