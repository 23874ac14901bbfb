"""Events of a community stream beside `CommunitySummarized`: dissolution and assignment.

A community's stream is `uuid5(NS, "community/{fingerprint}")`, the fingerprint of the
members and edges it was detected with. `CommunitySummarized` (in `policy`) forms it, or
forms it again with its detected members; these record the rest of its life.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import msgspec

from apexmem.events.base import Event

__all__ = ["CommunityDissolved", "CommunityMemberAssigned"]


class CommunityDissolved(Event, frozen=True, kw_only=True, tag="community-dissolved.v1"):
    """A detection no longer found this community; its members left it (the log keeps them)."""

    fingerprint: str
    reason: str


class CommunityMemberAssigned(Event, frozen=True, kw_only=True, tag="community-member-assigned.v1"):
    """Between detections, an entity joined the community most of its neighbours belong to.

    The community's summary no longer covers every member: the next detection summarizes
    it again.
    """

    entity_id: UUID
    votes: Annotated[int, msgspec.Meta(ge=1)]
    """Edges from the entity to members of this community."""
    cast: Annotated[int, msgspec.Meta(ge=1)]
    """Edges from the entity to members of any community."""
