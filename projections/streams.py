"""evolve(state, event) -> state for every write-side stream: pure folds, no I/O."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar
from uuid import UUID

import msgspec

from apexmem.domain.identities import object_key
from apexmem.domain.state import (
    AliasState,
    EntityState,
    EpisodeState,
    FactVersion,
    PolicyState,
    SlotState,
)
from apexmem.events.base import Event
from apexmem.events.entity import AliasClaimed, EntityArchived, EntityMerged, EntityObserved
from apexmem.events.episode import EpisodeStarted, MessageRecorded
from apexmem.events.fact import (
    FactAsserted,
    FactReinforced,
    FactRetracted,
    FactSuperseded,
)
from apexmem.events.policy import DecayRateSet, RelationMapped

__all__ = [
    "evolve_alias",
    "evolve_entity",
    "evolve_episode",
    "evolve_policy",
    "evolve_slot",
    "fold",
]

replace = msgspec.structs.replace
S = TypeVar("S")


def evolve_entity(state: EntityState, event: Event) -> EntityState:
    """Apply one entity-stream event."""
    version = state.version + 1
    if isinstance(event, EntityObserved):
        return replace(
            state,
            version=version,
            entity_id=event.entity_id,
            entity_type=event.entity_type,
            canonical_name=event.canonical_name,
            name=state.name or event.name,
            summary=event.summary if event.summary is not None else state.summary,
            archived=False,  # observed again: an archived entity is back
        )
    if isinstance(event, EntityMerged):
        return replace(state, version=version, merged_into=event.into)
    if isinstance(event, EntityArchived):
        return replace(state, version=version, archived=True)
    return replace(state, version=version)


def evolve_alias(state: AliasState, event: Event) -> AliasState:
    """Apply one alias-stream event: the first claim wins, later ones change nothing."""
    if isinstance(event, AliasClaimed) and state.entity_id is None:
        return AliasState(version=state.version + 1, entity_id=event.entity_id)
    return replace(state, version=state.version + 1)


def evolve_slot(state: SlotState, event: Event) -> SlotState:
    """Apply one fact-slot event."""
    version = state.version + 1
    if isinstance(event, FactAsserted):
        added = FactVersion(
            fact_key=event.fact_id.int,
            object_key=object_key(event.object_id, event.value, event.fact),
            confidence=event.confidence,
            valid_from=event.valid_from,
            valid_until=event.valid_until,
            observed_at=event.observed_at,
            standing="alternative" if event.outcome == "alternative" else "believed",
            object_id=event.object_id,
            value=event.value,
            fact=event.fact,
        )
        return SlotState(version=version, versions=(*state.versions, added))
    if isinstance(event, FactReinforced):
        changes: dict[str, object] = {
            "confidence": event.confidence,
            "observed_at": event.observed_at,
        }
        if event.fact is not None:
            changes["fact"] = event.fact
        start = event.valid_from
        if start is not None:
            old = state.find(event.fact_id)
            if old is not None and start not in old.restarts:
                changes["restarts"] = tuple(sorted((*old.restarts, start)))
        return _change(state, version, event.fact_id, **changes)
    if isinstance(event, FactSuperseded):
        return _change(
            state,
            version,
            event.fact_id,
            valid_until=event.valid_until,
            superseded_by_key=event.superseded_by.int,
        )
    if isinstance(event, FactRetracted):
        if event.valid_until is None:
            return _change(state, version, event.fact_id, standing="withdrawn")
        return _change(state, version, event.fact_id, valid_until=event.valid_until)
    return replace(state, version=version)


def _change(state: SlotState, version: int, target: UUID, /, **changes: object) -> SlotState:
    key = target.int
    versions = tuple(replace(v, **changes) if v.fact_key == key else v for v in state.versions)
    return SlotState(version=version, versions=versions)


def evolve_episode(state: EpisodeState, event: Event) -> EpisodeState:
    """Apply one episode-stream event."""
    if isinstance(event, EpisodeStarted):
        return replace(state, version=state.version + 1, started=True)
    if isinstance(event, MessageRecorded):
        return replace(state, version=state.version + 1, messages=state.messages + 1)
    return replace(state, version=state.version + 1)


def evolve_policy(state: PolicyState, event: Event) -> PolicyState:
    """Apply one policy-stream event."""
    version = state.version + 1
    if isinstance(event, RelationMapped):
        return replace(state, version=version, mappings=(*state.mappings, event))
    if isinstance(event, DecayRateSet):
        rates = tuple(r for r in state.decay_rates if r[0] != event.edge_type)
        return replace(state, version=version, decay_rates=(*rates, (event.edge_type, event.rate)))
    return replace(state, version=version)


def fold(evolve: Callable[[S, Event], S], state: S, events: Iterable[Event]) -> S:
    """Fold events into a state with one of the evolve functions above."""
    for event in events:
        state = evolve(state, event)
    return state
