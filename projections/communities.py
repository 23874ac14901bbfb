"""The community projector: a community stream's events as read-model changes (pure).

Detections are recorded, never recomputed: a rebuild applies the same formations,
dissolutions and assignments, so no summarizer runs again.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final
from uuid import UUID

import msgspec

from apexmem.events.community import CommunityDissolved, CommunityMemberAssigned
from apexmem.events.envelope import RecordedEvent
from apexmem.events.policy import CommunitySummarized

__all__ = ["COMMUNITY_PROJECTORS", "Assigned", "CommunityChange", "Dissolved", "Formed"]


class Formed(msgspec.Struct, frozen=True, kw_only=True):
    """A community was formed (or formed again) with these members and this summary."""

    community_id: UUID
    fingerprint: str
    name: str
    summary: str
    summarizer: str
    entity_ids: list[UUID]
    at: datetime
    position: int
    version: int


class Dissolved(msgspec.Struct, frozen=True, kw_only=True):
    """A community was dissolved: every member left it."""

    community_id: UUID
    at: datetime
    position: int
    version: int


class Assigned(msgspec.Struct, frozen=True, kw_only=True):
    """An entity joined a community by neighbour vote; its summary is stale."""

    community_id: UUID
    entity_id: UUID
    at: datetime
    position: int
    version: int


CommunityChange = Formed | Dissolved | Assigned


def _summarized(event: RecordedEvent, data: CommunitySummarized) -> list[CommunityChange]:
    return [
        Formed(
            community_id=event.stream_id,
            fingerprint=data.fingerprint,
            name=data.name,
            summary=data.summary,
            summarizer=data.summarizer,
            entity_ids=list(dict.fromkeys(data.entity_ids)),
            at=event.recorded_at,
            position=event.position,
            version=event.version,
        )
    ]


def _dissolved(event: RecordedEvent, data: CommunityDissolved) -> list[CommunityChange]:
    del data
    return [
        Dissolved(
            community_id=event.stream_id,
            at=event.recorded_at,
            position=event.position,
            version=event.version,
        )
    ]


def _assigned(event: RecordedEvent, data: CommunityMemberAssigned) -> list[CommunityChange]:
    return [
        Assigned(
            community_id=event.stream_id,
            entity_id=data.entity_id,
            at=event.recorded_at,
            position=event.position,
            version=event.version,
        )
    ]


COMMUNITY_PROJECTORS: Final[dict[type, Callable[[RecordedEvent, Any], list[CommunityChange]]]] = {
    CommunitySummarized: _summarized,
    CommunityDissolved: _dissolved,
    CommunityMemberAssigned: _assigned,
}
"""Event class to its projector."""
