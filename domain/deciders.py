"""Deciders for everything but assertions: entities, aliases, merges, retractions, messages."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

import msgspec

from apexmem.domain.identities import entity_id as derive_entity_id
from apexmem.domain.identities import episode_id, message_id
from apexmem.domain.state import AliasState, EntityState, EpisodeState, SlotState
from apexmem.events.base import Event
from apexmem.events.entity import AliasClaimed, EntityMerged, EntityObserved
from apexmem.events.episode import EpisodeStarted, MessageRecorded
from apexmem.events.errors import NotFoundError, ValidationError
from apexmem.events.fact import FactRetracted

__all__ = [
    "AliasOutcome",
    "create_entity",
    "decide_alias",
    "decide_merge",
    "decide_message",
    "decide_retract",
    "decide_revival",
    "decide_summary",
]

AliasOutcome = Literal["claimed", "unchanged", "refused"]


def create_entity(
    entity_type: str, canonical: str, name: str, summary: str | None
) -> tuple[UUID, EntityObserved, AliasClaimed]:
    """A new entity: its first observation and the claim of its canonical name, as one pair."""
    new_id = derive_entity_id(entity_type, canonical)
    observed = EntityObserved(
        entity_id=new_id,
        entity_type=entity_type,
        canonical_name=canonical,
        name=name,
        summary=summary,
    )
    claim = AliasClaimed(alias=canonical, name=name, entity_type=entity_type, entity_id=new_id)
    return new_id, observed, claim


def decide_summary(state: EntityState, summary: str | None) -> list[Event]:
    """A new observation of an existing entity is an event only when its summary changes."""
    if summary is None or summary == state.summary or state.entity_id is None:
        return []
    return [_observed(state, summary)]


def decide_revival(state: EntityState) -> list[Event]:
    """An archived entity observed again is back: one observation, its summary unchanged.

    Nothing for an entity that is not archived (an observation changes nothing then).
    """
    if not state.archived or state.entity_id is None:
        return []
    return [_observed(state, None)]


def _observed(state: EntityState, summary: str | None) -> EntityObserved:
    """An existing entity observed again (with a new summary, or None to keep its own)."""
    assert state.entity_id is not None
    assert state.entity_type is not None and state.canonical_name is not None
    return EntityObserved(
        entity_id=state.entity_id,
        entity_type=state.entity_type,
        canonical_name=state.canonical_name,
        name=state.name or state.canonical_name,
        summary=summary,
    )


def decide_alias(
    state: AliasState, entity: UUID, alias: str, name: str, entity_type: str
) -> tuple[AliasOutcome, list[Event]]:
    """First claim wins: claim a free name, keep one already ours, refuse one taken."""
    if state.entity_id is None:
        claim = AliasClaimed(alias=alias, name=name, entity_type=entity_type, entity_id=entity)
        return "claimed", [claim]
    return ("unchanged" if state.entity_id == entity else "refused"), []


def decide_merge(
    source: EntityState,
    target: EntityState,
    chain_of_target: list[UUID],
    reason: str | None,
    *,
    target_name: str | None = None,
) -> list[Event]:
    """Merge `source` forward into `target`; refuse self-merges, cycles and type changes.

    `target_name` is the target as the caller named it (it may resolve to another entity).
    """
    if source.entity_id is None or target.entity_id is None:
        raise NotFoundError("both entities of a merge must exist")
    if source.entity_id == target.entity_id or source.entity_id in chain_of_target:
        raise ValidationError(
            "target",
            target_name or target.name,
            f"already resolves to {source.name!r}, the source (merged into it before)",
        )
    if source.merged_into is not None:
        raise ValidationError("source", source.name, "was already merged into another entity")
    if source.entity_type != target.entity_type:
        raise ValidationError(
            "target", target.name, f"is a {target.entity_type}, not a {source.entity_type}"
        )
    return [EntityMerged(entity_id=source.entity_id, into=target.entity_id, reason=reason)]


def decide_retract(
    state: SlotState, fact: UUID, valid_until: datetime | None, reason: str
) -> list[Event]:
    """End a believed version at `valid_until`, or withdraw it entirely when that is None."""
    version = state.find(fact)
    if version is None:
        raise NotFoundError(f"fact {fact} is not in its slot")
    if version.standing == "withdrawn":
        raise ValidationError("fact_id", str(fact), "is already retracted")
    if valid_until is not None:
        if valid_until <= version.valid_from:
            raise ValidationError(
                "valid_until",
                valid_until,
                f"is not after the fact's valid_from {version.valid_from}",
            )
        if version.valid_until is not None and version.valid_until <= valid_until:
            raise ValidationError(
                "valid_until", valid_until, f"is not before the fact's end {version.valid_until}"
            )
    return [FactRetracted(fact_id=fact, valid_until=valid_until, reason=reason)]


class MessageDecision(msgspec.Struct, frozen=True):
    """The events of one recorded message and the message's id."""

    events: list[Event]
    message_id: UUID


def decide_message(
    state: EpisodeState,
    *,
    conversation: str,
    speaker: str,
    text: str,
    at: datetime,
    ref: str | None,
) -> MessageDecision:
    """Start the episode on its first message, then record the message."""
    stream = episode_id(conversation)
    events: list[Event] = []
    if not state.started:
        events.append(EpisodeStarted(episode_id=stream, conversation=conversation))
    new_id = message_id(stream, state.version + len(events) + 1)
    events.append(MessageRecorded(message_id=new_id, speaker=speaker, text=text, at=at, ref=ref))
    return MessageDecision(events, new_id)
