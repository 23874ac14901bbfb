"""What the model extractor asks a chat model, and how its answer becomes an Extraction.

Pure: the request body of an OpenAI-compatible chat completion with a JSON-schema answer
format, and the reading of the answer. The answer is the model's and may be anything: what
does not fit the schema is reported (`Unreadable`), dates that do not parse or run backwards
are dropped with a reason, so a fact is kept at the message's time rather than lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, time
from typing import Any, Final

import msgspec

from apexmem.domain.extraction import (
    MAX_FACTS_PER_MESSAGE,
    MAX_MENTIONS_PER_MESSAGE,
    ExtractedFact,
    Extraction,
    KnownName,
    Mention,
    Utterance,
)
from apexmem.domain.names import normalize
from apexmem.domain.types import EDGE_TYPES

__all__ = [
    "OFFERED_ENTITY_TYPES",
    "SYSTEM_PROMPT",
    "ChatLimits",
    "Reading",
    "Unreadable",
    "answer_schema",
    "read_answer",
    "request_body",
    "user_prompt",
]

OFFERED_ENTITY_TYPES: Final = (
    "person",
    "organization",
    "project",
    "tool",
    "technology",
    "language",
    "concept",
    "event",
    "location",
)
"""The entity types the model may choose from (not `file` or `config`: structural data is
not extracted)."""

SYSTEM_PROMPT: Final = f"""\
You read one message of a conversation, with the messages before it as context, and record \
what it states about people and the things they deal with, as JSON.

Rules:
1. Only conversational statements count: what a person says about themselves, others, their \
work, preferences, plans, places and opinions. Tool output, command results, code, file \
contents, configuration, logs and other raw data state nothing: answer with empty lists.
2. Skip greetings, thanks, filler and talk about the conversation itself.
3. Entity names are at least 3 characters long, written as in the message (proper names \
capitalized). No single letters, two-letter tokens, URLs, file paths, e-mail addresses, \
phone numbers, street addresses or secrets.
4. Entity types are one of: {", ".join(OFFERED_ENTITY_TYPES)}.
5. "I", "me" and "my" in the current message are its speaker, named in the prompt: use that \
name as the subject.
6. A fact links a subject to an object entity, or to a literal value (a diet, an age, a \
role: put it in "value" and leave "object" null). "relation" is a short snake_case verb \
phrase: lives_in, works_at, moved_to, uses, prefers, likes, knows, manages, studies, owns, \
plans, is_a, part_of.
7. "edge_type": semantic (uses, knows, prefers, works_at, lives_in), temporal \
(preceded_by, followed_by, happened_during), causal (caused, led_to, prevented) or entity \
(is_a, part_of, instance_of, alias_of).
8. "fact" is one plain sentence stating the fact with names, not pronouns.
9. "confidence" is between 0 and 1: how sure the message makes it.
10. Times: when the message says when a fact started or ended ("last week", "since March", \
"until 2021", "two years ago"), resolve it against the message time and give "valid_from" \
and "valid_until" as ISO 8601 dates (YYYY-MM-DD) or UTC times; otherwise null. A move or a \
change ("I moved to Berlin last week", "switched from X to Y") starts the new fact then.
11. Write names and relations in English; translate if needed.
12. Answer with empty lists when the message states nothing."""
"""The instructions every request starts with."""

_INSTRUCTION: Final = "Extract entities and relationships as JSON."


class ChatLimits(msgspec.Struct, frozen=True, kw_only=True):
    """How much one answer may hold (the model is told, and the rest is cut)."""

    max_entities: int = MAX_MENTIONS_PER_MESSAGE
    max_facts: int = MAX_FACTS_PER_MESSAGE


class Unreadable(Exception):
    """The model's answer is not the JSON the schema asks for; says what was found."""


class Reading(msgspec.Struct, frozen=True):
    """An answer read: the extraction, and what was dropped from it and why."""

    extraction: Extraction
    dropped: tuple[str, ...] = ()


def user_prompt(message: Utterance) -> str:
    """The prompt for one message: its context lines, its speaker and time, the message."""
    lines = []
    context = message.context
    if context:
        joined = "\n".join(f"{_speaker(c)}: {c.text}" for c in context)
        lines.append(f"Context (last {len(context)} messages):\n{joined}\n")
    at = message.at.astimezone(UTC)
    lines.append(f"Speaker: {_speaker(message)}")
    lines.append(f"Message time: {at.isoformat().replace('+00:00', 'Z')} ({at:%A})\n")
    lines.append(f"Current message:\n{message.text}\n")
    lines.append(_INSTRUCTION)
    return "\n".join(lines)


def answer_schema(limits: ChatLimits) -> dict[str, Any]:
    """The JSON schema of an answer, in the strict form structured outputs accept."""
    nullable = {"type": ["string", "null"]}
    entity = _object(
        name={"type": "string"}, type={"type": "string", "enum": list(OFFERED_ENTITY_TYPES)}
    )
    fact = _object(
        subject={"type": "string"},
        relation={"type": "string"},
        object=nullable,
        value=nullable,
        edge_type={"type": "string", "enum": list(EDGE_TYPES)},
        fact={"type": "string"},
        confidence={"type": "number"},
        valid_from=nullable,
        valid_until=nullable,
    )
    return _object(
        entities={"type": "array", "items": entity, "maxItems": limits.max_entities},
        facts={"type": "array", "items": fact, "maxItems": limits.max_facts},
    )


def request_body(model: str, message: Utterance, limits: ChatLimits) -> dict[str, Any]:
    """The chat completion request for one message (deterministic: temperature 0)."""
    return {
        "model": model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user_prompt(message)},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "extraction",
                "strict": True,
                "schema": answer_schema(limits),
            },
        },
    }


class _Entity(msgspec.Struct, frozen=True):
    name: str
    type: str = "concept"


class _Fact(msgspec.Struct, frozen=True):
    subject: str
    relation: str
    object: str | None = None
    value: str | None = None
    edge_type: str = "semantic"
    fact: str | None = None
    confidence: float = 0.8
    valid_from: str | None = None
    valid_until: str | None = None


class _Answer(msgspec.Struct, frozen=True):
    entities: list[_Entity] = []
    facts: list[_Fact] = []


def read_answer(
    content: str,
    message: Utterance,
    known: Mapping[str, KnownName],
    limits: ChatLimits,
) -> Reading:
    """The extraction a model's JSON answer states about `message`.

    Entities past `max_entities` and facts past `max_facts` are cut. A fact's ends take
    their type from the answer's entities, else from the names the memory knows, else the
    speaker is a person and anything else a concept. Dates are ISO 8601 dates (midnight
    UTC) or times (UTC when no zone is given, as the prompt asks for UTC); one that does not
    parse, or an end not after its start, is dropped and the fact kept. Raises Unreadable
    when the content is not JSON of the schema's shape (a Markdown code fence around it is
    tolerated).
    """
    try:
        answer = msgspec.json.decode(_unfenced(content) or "null", type=_Answer)
    except msgspec.DecodeError as e:
        raise Unreadable(f"the answer does not fit the schema: {e}") from e
    dropped: list[str] = []
    if len(answer.entities) > limits.max_entities:
        dropped.append(f"{len(answer.entities) - limits.max_entities} entities past the limit")
    if len(answer.facts) > limits.max_facts:
        dropped.append(f"{len(answer.facts) - limits.max_facts} facts past the limit")
    types = _types(answer.entities, message, known)
    mentions = tuple(Mention(e.name, e.type) for e in answer.entities[: limits.max_entities])
    facts = tuple(_extracted(f, types, message, dropped) for f in answer.facts[: limits.max_facts])
    return Reading(Extraction(mentions, facts), tuple(dropped))


def _extracted(
    fact: _Fact, types: dict[str, str], message: Utterance, dropped: list[str]
) -> ExtractedFact:
    valid_from = _date(fact.valid_from, "valid_from", fact.relation, dropped)
    valid_until = _date(fact.valid_until, "valid_until", fact.relation, dropped)
    start = valid_from or message.at
    if valid_until is not None and valid_until <= start:
        dropped.append(
            f"fact {fact.relation!r}: valid_until {fact.valid_until!r} is not after its start"
        )
        valid_until = None
    target = fact.object if fact.object else None
    return ExtractedFact(
        subject=Mention(fact.subject, types.get(normalize(fact.subject), "concept")),
        relation=fact.relation,
        object=None if target is None else Mention(target, types.get(normalize(target), "concept")),
        value=None if target is not None else fact.value,
        edge_type=fact.edge_type,
        confidence=fact.confidence,
        fact=fact.fact,
        valid_from=valid_from,
        valid_until=valid_until,
    )


def _date(text: str | None, field: str, relation: str, dropped: list[str]) -> datetime | None:
    """An answer's date or time as UTC; None (with a reason) when it does not parse."""
    if not text:
        return None
    value = text.strip()
    try:
        if len(value) == 10:
            return datetime.combine(date.fromisoformat(value), time(), tzinfo=UTC)
        parsed = datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        dropped.append(f"fact {relation!r}: {field} {text!r} is not an ISO 8601 date")
        return None


def _types(
    entities: Sequence[_Entity], message: Utterance, known: Mapping[str, KnownName]
) -> dict[str, str]:
    """Entity type by normalized name: the answer's, else the memory's, else a speaker's."""
    types = {k: v.entity_type for k, v in known.items()}
    speaker = message.speaker_name()
    if speaker is not None:
        types[normalize(speaker)] = "person"
    types.update({normalize(e.name): e.type for e in entities})
    return types


def _unfenced(content: str) -> str:
    """The answer without a Markdown code fence around it (models add one unasked)."""
    text = content.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        text = text[3:-3]
        text = text.removeprefix("json").removeprefix("JSON")
    return text.strip()


def _speaker(message: Utterance) -> str:
    """The speaker's entity name, else the role as recorded (`assistant`)."""
    return message.speaker_name() or message.speaker


def _object(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
