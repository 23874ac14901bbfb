"""The current-graph projector: each event becomes the read-model changes it causes (pure).

Fact versions are kept bitemporally. A version has one row per state the store knew it in:
a row holds from `recorded_at` (the event that gave it that state) until `expired_at` (the
event that changed it: a reinforcement, a supersession close, a retraction). The open row
(`expired_at` unset) is what the store believes now, and "known at S" is the row with
`recorded_at <= S < expired_at`, so as-of questions are predicates, never replays.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final
from uuid import UUID

import msgspec

from apexmem.events.entity import AliasClaimed, EntityArchived, EntityMerged, EntityObserved
from apexmem.events.envelope import RecordedEvent
from apexmem.events.episode import EntitiesMentioned, EpisodeStarted, MessageRecorded
from apexmem.events.extraction import MessageExtracted
from apexmem.events.fact import (
    FactArchived,
    FactAsserted,
    FactReinforced,
    FactRetracted,
    FactSuperseded,
)
from apexmem.events.link import FactLinked
from apexmem.events.policy import DecayRateSet, FactsRetrieved, RetrievalCountsDecayed
from apexmem.events.similarity import EntityMatched
from apexmem.projections.communities import COMMUNITY_PROJECTORS, CommunityChange
from apexmem.projections.episodes import Linked, entities_mentioned, episode_started, linked
from apexmem.projections.links import link_row
from apexmem.projections.usage import CountsDecayed, counts_decayed

__all__ = ["Change", "Insert", "Retrieved", "Revise", "Touch", "project"]


# gc=False on the three changes: a catch-up makes thousands per batch and none is ever
# part of a reference cycle, so the cyclic garbage collector need not track them.


class Insert(msgspec.Struct, frozen=True, gc=False):
    """Add a row to a table."""

    table: str
    row: dict[str, Any]


class Touch(msgspec.Struct, frozen=True, gc=False):
    """Change columns of one entity row in place (names and bookkeeping, not beliefs)."""

    entity_id: UUID
    values: dict[str, Any]


class Revise(msgspec.Struct, frozen=True, gc=False):
    """Close a fact version's open row at `at` and open a new one with `values` changed."""

    fact_id: UUID
    at: datetime
    position: int
    values: dict[str, Any]


class Retrieved(msgspec.Struct, frozen=True, gc=False):
    """A recall returned these fact versions once more (retrieval counts, not beliefs)."""

    fact_ids: list[UUID]
    at: datetime


Change = Insert | Touch | Revise | Retrieved | Linked | CountsDecayed | CommunityChange
_Projector = Callable[[RecordedEvent, Any], list[Change]]


def project(event: RecordedEvent) -> list[Change]:
    """The read-model changes one event causes; events the graph does not show give none."""
    projector = _PROJECTORS.get(type(event.data))
    return projector(event, event.data) if projector is not None else []


def _entity_observed(event: RecordedEvent, data: EntityObserved) -> list[Change]:
    if event.version > 1 and not data.anew:
        # Seen again: an archived (evicted) entity is back.
        values: dict[str, Any] = {"last_seen": event.recorded_at, "archived_at": None}
        if data.summary is not None:
            values["summary"] = data.summary
        return [Touch(data.entity_id, values), *linked(event, data.entity_id)]
    row = {
        "entity_id": data.entity_id,
        "entity_type": data.entity_type,
        "canonical_name": data.canonical_name,
        "name": data.name,
        "summary": data.summary,
        "first_seen": event.recorded_at,
        "last_seen": event.recorded_at,
        "merged_into": None,
        "merged_at": None,
        "archived_at": None,
        "position": event.position,
    }
    return [Insert("entities", row), *linked(event, data.entity_id)]


def _entity_merged(event: RecordedEvent, data: EntityMerged) -> list[Change]:
    return [Touch(data.entity_id, {"merged_into": data.into, "merged_at": event.recorded_at})]


def _entity_archived(event: RecordedEvent, data: EntityArchived) -> list[Change]:
    archive = {
        "entity_id": data.entity_id,
        "position": event.position,
        "archived_at": event.recorded_at,
        "revived_at": None,  # until the entity is observed again
    }
    return [
        Touch(data.entity_id, {"archived_at": event.recorded_at}),
        Insert("entity_archives", archive),
    ]


def _entity_matched(event: RecordedEvent, data: EntityMatched) -> list[Change]:
    row = {
        "entity_id": data.entity_id,
        "position": event.position,
        "candidate": data.candidate,
        "score": data.score,
        "verdict": data.verdict,
        "judge": data.judge,
        "model": data.model,
        "recorded_at": event.recorded_at,
    }
    return [Insert("entity_matches", row)]


def _alias_claimed(event: RecordedEvent, data: AliasClaimed) -> list[Change]:
    row = {
        "alias": data.alias,
        "entity_type": data.entity_type,
        "name": data.name,
        "entity_id": data.entity_id,
        "recorded_at": event.recorded_at,
        "position": event.position,
    }
    return [Insert("aliases", row)]


def _fact_asserted(event: RecordedEvent, data: FactAsserted) -> list[Change]:
    row = {
        "fact_id": data.fact_id,
        "position": event.position,
        "slot_id": event.stream_id,
        "subject_id": data.subject_id,
        "relation": data.relation,
        "object_id": data.object_id,
        "value": data.value,
        "edge_type": data.edge_type,
        "fact": data.fact,
        "confidence": data.confidence,
        "standing": "alternative" if data.outcome == "alternative" else "believed",
        "valid_from": data.valid_from,
        "valid_until": data.valid_until,
        "recorded_at": event.recorded_at,
        "expired_at": None,
        "asserted_at": event.recorded_at,
        "observed_at": data.observed_at,
        "supersedes": data.supersedes,
        "superseded_by": None,
        "ref": data.ref,
        "actor": event.actor,
        "episode": event.episode,
    }
    changes: list[Change] = [Insert("facts", row)]
    seen = {"last_seen": event.recorded_at, "archived_at": None}  # an archived entity is back
    changes.append(Touch(data.subject_id, seen))
    if data.object_id is not None:
        changes.append(Touch(data.object_id, seen))
    # The episode, if any, is heard of; its links to the fact's ends are the fact row's
    # `episode` (readmodels.episodes), not rows of their own.
    changes += linked(event)
    return changes


def _fact_reinforced(event: RecordedEvent, data: FactReinforced) -> list[Change]:
    values: dict[str, Any] = {"confidence": data.confidence, "observed_at": data.observed_at}
    if data.fact is not None:  # told in other words: the version reads so from now on
        values["fact"] = data.fact
    # Observed again in an episode: the fact's entities were mentioned there too.
    return [
        Revise(data.fact_id, event.recorded_at, event.position, values),
        *linked(event, fact=data.fact_id),
    ]


def _fact_superseded(event: RecordedEvent, data: FactSuperseded) -> list[Change]:
    values = {"valid_until": data.valid_until, "superseded_by": data.superseded_by}
    return [Revise(data.fact_id, event.recorded_at, event.position, values)]


def _fact_retracted(event: RecordedEvent, data: FactRetracted) -> list[Change]:
    values: dict[str, Any] = (
        {"standing": "withdrawn"} if data.valid_until is None else {"valid_until": data.valid_until}
    )
    return [Revise(data.fact_id, event.recorded_at, event.position, values)]


def _fact_archived(event: RecordedEvent, data: FactArchived) -> list[Change]:
    return [Revise(data.fact_id, event.recorded_at, event.position, {"standing": "archived"})]


def _episode_started(event: RecordedEvent, data: EpisodeStarted) -> list[Change]:
    # Not an Insert: a fact recorded with this episode may have started it already.
    return [*episode_started(event, data)]


def _message_recorded(event: RecordedEvent, data: MessageRecorded) -> list[Change]:
    row = {
        "message_id": data.message_id,
        "episode_id": event.stream_id,
        "speaker": data.speaker,
        "text": data.text,
        "at": data.at,
        "ref": data.ref,
        "recorded_at": event.recorded_at,
        "position": event.position,
    }
    return [Insert("messages", row)]


def _entities_mentioned(event: RecordedEvent, data: EntitiesMentioned) -> list[Change]:
    changes: list[Change] = [
        Insert(
            "mentions",
            {"message_id": data.message_id, "entity_id": e, "recorded_at": event.recorded_at},
        )
        for e in dict.fromkeys(data.entity_ids)
    ]
    changes += entities_mentioned(event, data)
    return changes


def _message_extracted(event: RecordedEvent, data: MessageExtracted) -> list[Change]:
    row = {
        "message_id": data.message_id,
        "episode_id": event.stream_id,
        "extractor": data.extractor,
        "facts": len(data.fact_ids),
        "flagged": data.flagged,
        "surprise": data.surprise,
        "recorded_at": event.recorded_at,
        "position": event.position,
    }
    return [Insert("extractions", row)]


def _facts_retrieved(event: RecordedEvent, data: FactsRetrieved) -> list[Change]:
    return [Retrieved(data.fact_ids, event.recorded_at)]


def _counts_decayed(event: RecordedEvent, data: RetrievalCountsDecayed) -> list[Change]:
    return [*counts_decayed(event, data)]


def _decay_rate_set(event: RecordedEvent, data: DecayRateSet) -> list[Change]:
    row = {
        "edge_type": data.edge_type,
        "position": event.position,
        "rate": data.rate,
        "set_at": event.recorded_at,
    }
    return [Insert("decay_rates", row)]


def _fact_linked(event: RecordedEvent, data: FactLinked) -> list[Change]:
    return [Insert("fact_links", link_row(event, data))]


def _community(event: RecordedEvent, data: Any) -> list[Change]:
    return [*COMMUNITY_PROJECTORS[type(data)](event, data)]


_PROJECTORS: Final[dict[type, _Projector]] = {
    EntityObserved: _entity_observed,
    EntityMerged: _entity_merged,
    EntityArchived: _entity_archived,
    EntityMatched: _entity_matched,
    AliasClaimed: _alias_claimed,
    FactAsserted: _fact_asserted,
    FactReinforced: _fact_reinforced,
    FactSuperseded: _fact_superseded,
    FactRetracted: _fact_retracted,
    FactArchived: _fact_archived,
    EpisodeStarted: _episode_started,
    MessageRecorded: _message_recorded,
    EntitiesMentioned: _entities_mentioned,
    MessageExtracted: _message_extracted,
    FactsRetrieved: _facts_retrieved,
    RetrievalCountsDecayed: _counts_decayed,
    DecayRateSet: _decay_rate_set,
    FactLinked: _fact_linked,
    **dict.fromkeys(COMMUNITY_PROJECTORS, _community),
}
