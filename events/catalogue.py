"""The event union: every tag the log can hold, which stream kind holds it, and its class."""

from __future__ import annotations

from typing import Final

from apexmem.events.base import Event
from apexmem.events.community import CommunityDissolved, CommunityMemberAssigned
from apexmem.events.entity import AliasClaimed, EntityArchived, EntityMerged, EntityObserved
from apexmem.events.episode import EntitiesMentioned, EpisodeStarted, MessageRecorded
from apexmem.events.erasure import RecordsErased
from apexmem.events.extraction import MessageExtracted
from apexmem.events.fact import (
    FactArchived,
    FactAsserted,
    FactReinforced,
    FactRetracted,
    FactSuperseded,
)
from apexmem.events.fading import FactsFaded
from apexmem.events.link import FactLinked
from apexmem.events.policy import (
    CommunitySummarized,
    DecayRateSet,
    FactsRetrieved,
    RelationMapped,
    RetrievalCountsDecayed,
)
from apexmem.events.similarity import EntityMatched, FactContradicted, NotesLinked
from apexmem.events.tenancy import TenantDeleted

__all__ = ["EVENT_CLASSES", "STREAM_KINDS", "AnyEvent", "tag_of"]

AnyEvent = (
    EntityObserved
    | EntityMerged
    | EntityArchived
    | AliasClaimed
    | FactAsserted
    | FactReinforced
    | FactSuperseded
    | FactRetracted
    | FactArchived
    | EpisodeStarted
    | MessageRecorded
    | EntitiesMentioned
    | MessageExtracted
    | RelationMapped
    | DecayRateSet
    | FactsRetrieved
    | RetrievalCountsDecayed
    | FactsFaded
    | FactLinked
    | CommunitySummarized
    | CommunityDissolved
    | CommunityMemberAssigned
    | EntityMatched
    | FactContradicted
    | NotesLinked
    | RecordsErased
    | TenantDeleted
)
"""Every event class of catalogue v1."""

STREAM_KINDS: Final[dict[str, tuple[type[Event], ...]]] = {
    "entity": (EntityObserved, EntityMerged, EntityArchived, EntityMatched),
    "alias": (AliasClaimed,),
    "fact slot": (
        FactAsserted,
        FactReinforced,
        FactSuperseded,
        FactRetracted,
        FactArchived,
        FactContradicted,
    ),
    "episode": (EpisodeStarted, MessageRecorded, EntitiesMentioned, MessageExtracted),
    "policy": (RelationMapped, DecayRateSet),
    "usage": (FactsRetrieved, RetrievalCountsDecayed),
    "decay": (FactsFaded,),
    "fact link": (FactLinked,),
    "community": (CommunitySummarized, CommunityDissolved, CommunityMemberAssigned),
    "note linking": (NotesLinked,),
    "erasure": (RecordsErased,),
    "server": (TenantDeleted,),
}
"""Which events each kind of stream holds, in catalogue order."""

EVENT_CLASSES: Final[dict[str, type[Event]]] = {
    tag_cls.__struct_config__.tag: tag_cls  # type: ignore[misc]
    for kind in STREAM_KINDS.values()
    for tag_cls in kind
}
"""Tag (`"fact-asserted.v1"`) to event class."""


_TAGS: Final[dict[type, str]] = {cls: tag for tag, cls in EVENT_CLASSES.items()}


def tag_of(event: Event) -> str:
    """The versioned tag of an event, which is also its stored topic."""
    # A dict hit: `__struct_config__` builds a new config object on every access.
    known = _TAGS.get(type(event))
    if known is not None:
        return known
    tag = type(event).__struct_config__.tag
    assert isinstance(tag, str), f"{type(event).__name__} has no tag"
    return tag
