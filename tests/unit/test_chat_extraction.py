"""What the model extractor asks a chat model, and how it reads the answer: the prompt
with its context, speaker and time, the strict JSON schema, dates resolved and checked."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from uuid import UUID

import pytest

from apexmem.domain.chat_extraction import (
    ChatLimits,
    Unreadable,
    answer_schema,
    read_answer,
    request_body,
    user_prompt,
)
from apexmem.domain.extraction import KnownName, Mention, Utterance, checked

SAID_AT = datetime(2023, 3, 15, 18, 30, tzinfo=UTC)


def utterance(text: str, *, speaker: str = "Priya", **fields: object) -> Utterance:
    return Utterance(
        message_id=UUID(int=7),
        conversation="conv-7",
        speaker=speaker,
        text=text,
        at=SAID_AT,
        **fields,  # type: ignore[arg-type]
    )


def answer(*facts: dict[str, object], entities: list[dict[str, str]] | None = None) -> str:
    full = [
        {
            "object": None,
            "value": None,
            "edge_type": "semantic",
            "fact": "a sentence",
            "confidence": 0.9,
            "valid_from": None,
            "valid_until": None,
        }
        | f
        for f in facts
    ]
    return json.dumps({"entities": entities or [], "facts": full})


def test_the_prompt_shows_the_prior_turns_the_speaker_and_the_message_time() -> None:
    before = utterance("I'm vegetarian and I live in Lisbon.")
    message = utterance("Actually I just moved to Berlin last week.", context=(before,))

    prompt = user_prompt(message)

    assert prompt.startswith("Context (last 1 messages):\nPriya: I'm vegetarian and I live in")
    assert "Speaker: Priya\nMessage time: 2023-03-15T18:30:00Z (Wednesday)" in prompt
    assert prompt.endswith(
        "Current message:\nActually I just moved to Berlin last week.\n\n"
        "Extract entities and relationships as JSON."
    )


def test_a_prompt_without_prior_turns_has_no_context_block() -> None:
    prompt = user_prompt(utterance("Hello there"))

    assert "Context" not in prompt and prompt.startswith("Speaker: Priya")


def test_a_user_role_is_named_by_the_entity_it_stands_for() -> None:
    prompt = user_prompt(utterance("I live in Porto", speaker="user", speaker_entity="Sam"))

    assert "Speaker: Sam\n" in prompt


def test_the_request_asks_for_strict_json_schema_output_within_the_limits() -> None:
    body = request_body("qwen2.5:7b", utterance("Hi"), ChatLimits(max_entities=4, max_facts=6))

    assert body["model"] == "qwen2.5:7b" and body["temperature"] == 0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    spec = body["response_format"]
    assert spec["type"] == "json_schema" and spec["json_schema"]["strict"] is True
    schema = spec["json_schema"]["schema"]
    assert schema["properties"]["entities"]["maxItems"] == 4
    assert schema["properties"]["facts"]["maxItems"] == 6


def test_every_object_of_the_schema_requires_all_its_properties_and_no_others() -> None:
    schema = answer_schema(ChatLimits())
    fact = schema["properties"]["facts"]["items"]

    for node in (schema, schema["properties"]["entities"]["items"], fact):
        assert node["additionalProperties"] is False
        assert sorted(node["required"]) == sorted(node["properties"])
    assert fact["properties"]["edge_type"]["enum"] == ["semantic", "temporal", "causal", "entity"]


def test_a_dated_answer_becomes_a_fact_valid_from_that_day() -> None:
    content = answer(
        {
            "subject": "Priya",
            "relation": "lives_in",
            "object": "Berlin",
            "valid_from": "2023-03-08",
        },
        entities=[{"name": "Berlin", "type": "location"}],
    )

    reading = read_answer(content, utterance("I moved to Berlin last week."), {}, ChatLimits())

    [fact] = reading.extraction.facts
    assert fact.valid_from == datetime(2023, 3, 8, tzinfo=UTC) and fact.valid_until is None
    assert fact.subject == Mention("Priya", "person")
    assert fact.object == Mention("Berlin", "location")


def test_a_time_with_an_offset_is_kept_in_utc_and_one_without_is_read_as_utc() -> None:
    content = answer(
        {
            "subject": "Priya",
            "relation": "worked_at",
            "object": "Globex",
            "valid_from": "2021-01-01T09:00:00+02:00",
            "valid_until": "2022-06-30T17:00:00",
        }
    )

    [fact] = read_answer(content, utterance("..."), {}, ChatLimits()).extraction.facts

    assert fact.valid_from == datetime(2021, 1, 1, 7, tzinfo=UTC)
    assert fact.valid_until == datetime(2022, 6, 30, 17, tzinfo=UTC)


def test_a_date_that_does_not_parse_or_an_end_before_the_start_is_dropped_not_the_fact() -> None:
    content = answer(
        {"subject": "Priya", "relation": "works_at", "object": "Acme", "valid_from": "March"},
        {
            "subject": "Priya",
            "relation": "worked_at",
            "object": "Globex",
            "valid_from": "2022-05-01",
            "valid_until": "2021-01-01",
        },
    )

    reading = read_answer(content, utterance("..."), {}, ChatLimits())

    assert [(f.valid_from, f.valid_until) for f in reading.extraction.facts] == [
        (None, None),
        (datetime(2022, 5, 1, tzinfo=UTC), None),
    ]
    assert reading.dropped == (
        "fact 'works_at': valid_from 'March' is not an ISO 8601 date",
        "fact 'worked_at': valid_until '2021-01-01' is not after its start",
    )


def test_a_literal_value_ends_a_fact_without_an_object() -> None:
    content = answer({"subject": "Priya", "relation": "is", "value": "vegetarian"})

    [fact] = read_answer(content, utterance("I'm vegetarian"), {}, ChatLimits()).extraction.facts

    assert (fact.object, fact.value) == (None, "vegetarian")
    assert checked(read_answer(content, utterance("x"), {}, ChatLimits()).extraction).dropped == ()


def test_the_ends_of_a_fact_take_the_types_the_memory_knows() -> None:
    content = answer({"subject": "Priya", "relation": "uses", "object": "Snowflake"})
    known = {"snowflake": KnownName("Snowflake", "technology")}

    [fact] = read_answer(content, utterance("..."), known, ChatLimits()).extraction.facts

    assert fact.object == Mention("Snowflake", "technology")


def test_answers_past_the_limits_are_cut_with_a_reason() -> None:
    entities = [{"name": f"Thing {i}", "type": "concept"} for i in range(5)]
    facts: list[dict[str, object]] = [
        {"subject": "Priya", "relation": "likes", "object": f"Thing {i}"} for i in range(5)
    ]

    reading = read_answer(
        answer(*facts, entities=entities),
        utterance("..."),
        {},
        ChatLimits(max_entities=3, max_facts=2),
    )

    assert len(reading.extraction.mentions) == 3 and len(reading.extraction.facts) == 2
    assert reading.dropped == ("2 entities past the limit", "3 facts past the limit")


def test_an_answer_in_a_markdown_fence_is_read() -> None:
    content = (
        "```json\n" + answer({"subject": "Priya", "relation": "uses", "object": "Rust"}) + "\n```"
    )

    reading = read_answer(content, utterance("..."), {}, ChatLimits())

    assert len(reading.extraction.facts) == 1


@pytest.mark.parametrize(
    "content",
    [
        "Sure! Priya likes hiking.",
        '{"entities": [{"name": "Pri',
        '{"entities": "Priya", "facts": 3}',
        '{"facts": [{"relation": "likes"}]}',
        "",
    ],
)
def test_an_answer_that_is_not_json_of_the_schema_is_unreadable(content: str) -> None:
    with pytest.raises(Unreadable, match="does not fit the schema"):
        read_answer(content, utterance("..."), {}, ChatLimits())
