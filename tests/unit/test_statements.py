"""The offline extractor's first-person statements, the times they name, and the checked port."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import msgspec
import pytest

from apexmem.domain.extraction import ExtractedFact, Extraction, Mention, Utterance, checked
from apexmem.domain.heuristic import HeuristicExtractor
from apexmem.domain.when import resolve

AT = datetime(2024, 5, 20, 10, 0, tzinfo=UTC)


def _typed(text: str, speaker: str = "Priya") -> set[tuple[str, str, datetime | None]]:
    said = Utterance(message_id=uuid4(), conversation="c", speaker=speaker, text=text, at=AT)
    found = checked(HeuristicExtractor().extract(said, {})).extraction
    return {
        (f.relation, f.object.name if f.object else f.value or "", f.valid_from)
        for f in found.facts
        if f.relation != "mentioned_with"
    }


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("I'm vegetarian.", ("is", "vegetarian", None)),
        ("I live in Lisbon.", ("lives_in", "Lisbon", None)),
        ("Actually I just moved to Berlin last week.", ("lives_in", "Berlin", AT - timedelta(7))),
        (
            "I work at Acme Corp since 2019.",
            ("works_at", "Acme Corp", datetime(2019, 1, 1, tzinfo=UTC)),
        ),
        ("I used to work for IBM.", ("worked_at", "IBM", None)),
        ("I've been using Neovim a lot.", ("uses", "Neovim", None)),
        ("I really love hiking in the mountains!", ("likes", "hiking", None)),
        ("I don't like cilantro.", ("dislikes", "cilantro", None)),
        ("I prefer tea over coffee.", ("prefers", "tea", None)),
        ("I have a dog named Max.", ("owns", "a dog named Max", None)),
        ("I'm studying computer science at MIT.", ("studies", "computer science", None)),
        ("I'm planning to visit Japan.", ("plans", "visit Japan", None)),
        ("My manager Tom Baker wants us to migrate.", ("has_manager", "Tom Baker", None)),
        ("My favorite color is blue.", ("favorite_color", "blue", None)),
    ],
)
def test_a_first_person_statement_is_a_typed_fact_about_the_speaker(
    text: str, fact: tuple[str, str, datetime | None]
) -> None:
    assert fact in _typed(text)


@pytest.mark.parametrize(
    "text",
    [
        "Do you live in Rome?",
        "If I move to Paris I will tell you.",
        "I don't live in Oslo.",
        "I love it!",
    ],
)
def test_questions_conditionals_negations_and_vague_objects_state_nothing(text: str) -> None:
    assert _typed(text) == set()


def test_an_unmapped_role_gets_no_facts_and_a_mapped_one_gets_them_under_its_entity() -> None:
    said = Utterance(
        message_id=uuid4(), conversation="c", speaker="user", text="I live in Oslo.", at=AT
    )
    mapped = msgspec.structs.replace(said, speaker_entity="User")

    assert checked(HeuristicExtractor().extract(said, {})).extraction.facts == ()
    found = checked(HeuristicExtractor().extract(mapped, {})).extraction.facts
    [fact] = [f for f in found if f.relation == "lives_in"]
    assert (fact.subject.name, fact.fact) == ("User", "User lives in Oslo")


@pytest.mark.parametrize(
    ("phrase", "moment"),
    [
        ("last week", AT - timedelta(days=7)),
        ("yesterday", AT - timedelta(days=1)),
        ("3 days ago", AT - timedelta(days=3)),
        ("since March", datetime(2024, 3, 1, tzinfo=UTC)),
        ("in December", datetime(2023, 12, 1, tzinfo=UTC)),
        ("in 2019", datetime(2019, 1, 1, tzinfo=UTC)),
        ("in 2030", None),
    ],
)
def test_a_time_phrase_resolves_against_when_the_message_was_said(
    phrase: str, moment: datetime | None
) -> None:
    assert resolve(phrase, AT) == moment


@pytest.mark.parametrize(
    ("fact", "reason"),
    [
        (ExtractedFact(subject=Mention("Priya"), relation="is"), "exactly one of object and value"),
        (
            ExtractedFact(
                subject=Mention("Priya"), relation="is", value="a", object=Mention("Bob")
            ),
            "exactly one of object and value",
        ),
        (ExtractedFact(subject=Mention("Priya"), relation="is", value="  "), "an empty value"),
        (
            ExtractedFact(
                subject=Mention("Priya"), relation="is", value="x", valid_from=datetime(2024, 1, 1)
            ),
            "has no timezone",
        ),
        (
            ExtractedFact(
                subject=Mention("Priya"),
                relation="is",
                value="x",
                valid_from=AT,
                valid_until=AT - timedelta(days=1),
            ),
            "is not after valid_from",
        ),
    ],
)
def test_a_fact_the_memory_cannot_record_is_dropped_with_its_reason(
    fact: ExtractedFact, reason: str
) -> None:
    kept = checked(Extraction(facts=(fact,)))

    assert kept.extraction.facts == ()
    assert any(reason in why for why in kept.dropped), kept.dropped


def test_a_dated_value_fact_is_kept_with_its_dates() -> None:
    fact = ExtractedFact(
        subject=Mention("Priya", "person"),
        relation="is",
        value="vegetarian",
        valid_from=AT - timedelta(days=30),
        valid_until=AT,
    )

    [kept] = checked(Extraction(facts=(fact,))).extraction.facts

    assert (kept.value, kept.object, kept.valid_from, kept.valid_until) == (
        "vegetarian",
        None,
        AT - timedelta(days=30),
        AT,
    )
