"""The operations HTTP and MCP share beyond `apexmem.calls`: each takes a wire request and
makes one `Memory` call (recall with its trace, fact links, entity lookups, communities,
merge)."""

from __future__ import annotations

from apexmem.domain.identities import episode_id
from apexmem.memory import Memory
from apexmem.service.fact_links import FactGraph, FactLink
from apexmem.service.results import MergeRef
from apexmem.wire import (
    CommunitiesIn,
    CommunitiesOut,
    EntitiesIn,
    EntitiesOut,
    EpisodeIn,
    EpisodesIn,
    EpisodesOut,
    FactGraphIn,
    HistoryOut,
    LinkIn,
    MergeIn,
)

__all__ = [
    "communities",
    "entities",
    "episode",
    "episodes",
    "fact_graph",
    "link",
    "merge",
]


def link(memory: Memory, request: LinkIn) -> FactLink:
    """Link two fact versions (one `fact-linked.v1`; the same link again writes nothing)."""
    return memory.link(
        request.source, request.target, request.link_type, request.strength, actor=request.actor
    )


def fact_graph(memory: Memory, request: FactGraphIn) -> FactGraph:
    """The links around a fact, as known at `known_at`."""
    return memory.fact_graph(request.fact, request.depth, known_at=request.known_at)


def entities(memory: Memory, request: EntitiesIn) -> EntitiesOut:
    """Entities by name (exact, any case, aliases too; else by prefix)."""
    view = memory.as_of(known_at=request.known_at)
    found = view.entities(request.query, entity_type=request.entity_type, limit=request.limit)
    return EntitiesOut(entities=found)


def episodes(memory: Memory, request: EpisodesIn) -> EpisodesOut:
    """The conversations that mentioned an entity, first mentioned first."""
    view = memory.as_of(known_at=request.known_at, position=request.position)
    return EpisodesOut(episodes=view.episodes_for(request.entity, entity_type=request.entity_type))


def episode(memory: Memory, request: EpisodeIn) -> HistoryOut:
    """A conversation's events (its messages with speaker, text and time), oldest first."""
    events = memory.history(slot=episode_id(request.conversation))
    if request.known_at is not None:
        events = [e for e in events if e.recorded_at <= request.known_at]
    return HistoryOut(events=events)


def communities(memory: Memory, request: CommunitiesIn) -> CommunitiesOut:
    """Live communities, largest first."""
    return CommunitiesOut(communities=memory.communities(limit=request.limit, top=request.top))


def merge(memory: Memory, request: MergeIn) -> MergeRef:
    """Merge one entity forward into another of the same type."""
    return memory.merge(
        source=request.source,
        target=request.target,
        entity_type=request.entity_type,
        reason=request.reason,
        actor=request.actor,
        episode=request.episode,
    )
