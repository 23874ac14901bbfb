"""Extraction from messages: what an extractor is shown, what it answers, and the `Extractor` port.

An extractor reads one message (with the turns before it as context) and names the entities
it mentions and the facts it states, dated when the message says when. It may be slow or
wrong (a model), so whatever it says is checked here and recorded as events at the edge:
facts are asserted with their dates and values, so replay and rebuild apply the record and
never ask it again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Final, Protocol
from uuid import UUID

import msgspec

from apexmem.domain.names import (
    MIN_NAME_BYTES,
    clean_sentence,
    cut_utf8,
    display_name,
    normalize,
    normalize_relation,
)
from apexmem.domain.types import parse_edge_type, resolve_entity_type
from apexmem.events.base import MAX_FACT_BYTES, MAX_REF_BYTES
from apexmem.events.errors import ValidationError

__all__ = [
    "GENERIC_SPEAKERS",
    "MAX_FACTS_PER_MESSAGE",
    "MAX_MENTIONS_PER_MESSAGE",
    "PRIOR_TURNS",
    "Checked",
    "ExtractedFact",
    "Extraction",
    "Extractor",
    "KnownName",
    "Mention",
    "Utterance",
    "checked",
    "recordable_name",
]

MAX_MENTIONS_PER_MESSAGE: Final = 10
"""Entities kept from one message (the reference's `max_entities_per_message`)."""
MAX_FACTS_PER_MESSAGE: Final = 15
"""Facts kept from one message (the reference's `max_edges_per_message`)."""
GENERIC_SPEAKERS: Final = frozenset(
    {"user", "assistant", "system", "human", "bot", "agent", "model", "tool", "me", "you"}
)
"""Speaker roles that name no one: person entities only when mapped to one
(`Utterance.speaker_entity`, from `[memory.graph] user_entity` / `assistant_entity`)."""
PRIOR_TURNS: Final = 4
"""Messages of the same conversation shown before the one read (`Utterance.context`)."""


class Utterance(msgspec.Struct, frozen=True, kw_only=True):
    """A stored message as an extractor sees it."""

    message_id: UUID
    conversation: str
    speaker: str
    """As recorded: a name (`Priya`) or a role (`user`, `assistant`)."""
    text: str
    at: datetime
    """When it was said: relative times in the text ("last week") count from here."""
    ref: str | None = None
    speaker_entity: str | None = None
    """The entity a role speaker stands for (`[memory.graph] user_entity`), None for a
    named speaker (the name is the entity) or a role mapped to no one."""
    context: tuple[Utterance, ...] = ()
    """Up to `PRIOR_TURNS` earlier messages of the conversation, oldest first (their own
    context left empty)."""

    def speaker_name(self) -> str | None:
        """The name of the entity who speaks: the mapped entity of a role, the speaker's
        own name, or None for a role that names no one."""
        if self.speaker_entity is not None:
            return self.speaker_entity
        return None if normalize(self.speaker) in GENERIC_SPEAKERS else self.speaker


class KnownName(msgspec.Struct, frozen=True):
    """An entity the memory already knows under some name: its display name and type."""

    name: str
    entity_type: str


class Mention(msgspec.Struct, frozen=True):
    """An entity named in a message (created if the memory does not know it)."""

    name: str
    entity_type: str = "concept"


class ExtractedFact(msgspec.Struct, frozen=True, kw_only=True):
    """A fact a message states: from an entity to another, or to a literal value."""

    subject: Mention
    relation: str
    object: Mention | None = None
    """The other entity; None when the fact ends in `value` instead."""
    edge_type: str = "semantic"
    confidence: float = 0.8
    fact: str | None = None
    """The sentence; None lets the memory write `subject relation object`."""
    value: str | None = None
    """A literal (`vegetarian`, `42`) when the fact ends in no entity; exclusive with object."""
    valid_from: datetime | None = None
    """When it became true (timezone-aware); None means when the message was said."""
    valid_until: datetime | None = None
    """When it stopped being true (timezone-aware, after valid_from); None means open."""


class Extraction(msgspec.Struct, frozen=True):
    """What an extractor found in one message."""

    mentions: tuple[Mention, ...] = ()
    facts: tuple[ExtractedFact, ...] = ()


class Extractor(Protocol):
    """Turns a message into entity mentions and facts; its `name` is recorded with each verdict."""

    @property
    def name(self) -> str:
        """Which extractor (and version) read a message, e.g. `heuristic.v1`."""
        ...

    def extract(self, message: Utterance, known: Mapping[str, KnownName]) -> Extraction:
        """The entities and facts of `message`.

        `known` maps every name the memory knows (normalized: trimmed, lowercase) to its
        entity, so an extractor can recognize names however they are written.
        """
        ...


class Checked(msgspec.Struct, frozen=True):
    """An extraction cut to what the memory accepts, and what was dropped from it, and why."""

    extraction: Extraction
    dropped: tuple[str, ...] = ()


def checked(answer: object) -> Checked:
    """Keep the valid mentions (distinct, at most 10) and facts (at most 15) of an extraction.

    A name shorter than 3 bytes once normalized, a relation or edge type the memory refuses,
    a non-finite confidence, a fact from an entity to itself, a fact with both or neither of
    object and value, an empty value, a naive time and a valid_until not after valid_from
    are dropped with a reason; confidences are clamped to [0, 1] and values cut to 2048
    bytes. A fact's ends count as mentions. An answer that is
    not an Extraction with every field of its declared type raises ValidationError.
    """
    extraction = _well_formed(answer)
    dropped: list[str] = []
    mentions: dict[tuple[str, str], Mention] = {}
    for mention in extraction.mentions:
        if (kept := _mention(mention, dropped)) is not None:
            mentions.setdefault(_key(kept), kept)
    facts: list[ExtractedFact] = []
    for fact in extraction.facts:
        if (kept_fact := _fact(fact, dropped)) is not None:
            facts.append(kept_fact)
            for end in _ends(kept_fact):
                mentions.setdefault(_key(end), end)
    if len(mentions) > MAX_MENTIONS_PER_MESSAGE:
        dropped.append(f"{len(mentions) - MAX_MENTIONS_PER_MESSAGE} mentions past the limit")
    chosen = dict(list(mentions.items())[:MAX_MENTIONS_PER_MESSAGE])
    within = [f for f in facts if all(_key(end) in chosen for end in _ends(f))]
    if len(within) > MAX_FACTS_PER_MESSAGE:
        dropped.append(f"{len(within) - MAX_FACTS_PER_MESSAGE} facts past the limit")
    if len(within) < len(facts):
        dropped.append(f"{len(facts) - len(within)} facts about mentions past the limit")
    return Checked(
        Extraction(tuple(chosen.values()), tuple(within[:MAX_FACTS_PER_MESSAGE])), tuple(dropped)
    )


def _well_formed(answer: object) -> Extraction:
    """`answer` as an Extraction whose every field has its declared type, in UTF-8 text.

    Python never checks the types a Struct is built with, and an extractor is often a model's
    parsed output: a None name or a confidence given as text would otherwise fail deep in
    the write path, or be written where no reader could decode it.
    """
    if not isinstance(answer, Extraction):
        raise ValidationError("extraction", answer, "is not an Extraction")
    try:
        msgspec.json.encode(answer)  # text with lone surrogates cannot be stored
        return msgspec.convert(msgspec.to_builtins(answer), Extraction)
    except (msgspec.ValidationError, TypeError, UnicodeEncodeError) as e:
        raise ValidationError("extraction", answer, f"is malformed: {e}") from e


def recordable_name(field: str, name: object) -> str:
    """A plug-in's `name` (an extractor's, a summarizer's), checked before any of its verdicts
    is written: text of at most 256 bytes, as every actor is. The events store it as they
    are given it, so anything else would make the log undecodable."""
    if not isinstance(name, str):
        raise ValidationError(field, name, "is not text (a str)")
    try:
        size = len(name.encode())
    except UnicodeEncodeError as e:
        raise ValidationError(field, name, "is not valid UTF-8 text (a lone surrogate)") from e
    if size > MAX_REF_BYTES:
        raise ValidationError(field, name, f"is longer than {MAX_REF_BYTES} bytes (UTF-8)")
    return name


def _key(mention: Mention) -> tuple[str, str]:
    return normalize(mention.name), mention.entity_type


def _ends(fact: ExtractedFact) -> tuple[Mention, ...]:
    return (fact.subject,) if fact.object is None else (fact.subject, fact.object)


def _mention(mention: Mention, dropped: list[str]) -> Mention | None:
    name = display_name(mention.name)
    if len(normalize(name).encode()) < MIN_NAME_BYTES:
        dropped.append(f"name {mention.name!r}: shorter than {MIN_NAME_BYTES} bytes")
        return None
    return Mention(name, resolve_entity_type(mention.entity_type)[0])


def _fact(fact: ExtractedFact, dropped: list[str]) -> ExtractedFact | None:
    problem = _problem(fact)
    if problem is not None:
        dropped.append(f"fact {fact.relation!r}: {problem}")
        return None
    subject = _mention(fact.subject, dropped)
    target = None if fact.object is None else _mention(fact.object, dropped)
    if subject is None or (fact.object is not None and target is None):
        return None
    if target is not None and _key(subject) == _key(target):
        dropped.append(f"fact {fact.relation!r}: from {subject.name!r} to itself")
        return None
    try:
        relation = normalize_relation("relation", fact.relation)
        edge_type = parse_edge_type(fact.edge_type)
    except ValidationError as e:
        dropped.append(f"fact {fact.relation!r}: {e}")
        return None
    return ExtractedFact(
        subject=subject,
        relation=relation,
        object=target,
        value=_value(fact.value),
        edge_type=edge_type,
        confidence=min(1.0, max(0.0, fact.confidence)),
        fact=cut_utf8(clean_sentence(fact.fact), MAX_FACT_BYTES) if fact.fact else None,
        valid_from=fact.valid_from,
        valid_until=fact.valid_until,
    )


def _value(value: str | None) -> str | None:
    return None if value is None else cut_utf8(clean_sentence(value).strip(), MAX_FACT_BYTES)


def _problem(fact: ExtractedFact) -> str | None:
    """Why a fact cannot be recorded whatever its names, or None when it can."""
    if (fact.object is None) == (fact.value is None):
        return "needs exactly one of object and value"
    if fact.value is not None and not _value(fact.value):
        return "an empty value"
    if not math.isfinite(fact.confidence):
        return f"confidence {fact.confidence} is not finite"
    return _dates_problem(fact.valid_from, fact.valid_until)


def _dates_problem(starts: datetime | None, ends: datetime | None) -> str | None:
    """Why a fact's validity cannot be recorded, or None when it can."""
    for field, moment in (("valid_from", starts), ("valid_until", ends)):
        if moment is not None and moment.utcoffset() is None:
            return f"{field} {moment.isoformat()} has no timezone"
    if starts is not None and ends is not None and ends <= starts:
        return f"valid_until {ends.isoformat()} is not after valid_from {starts.isoformat()}"
    return None
