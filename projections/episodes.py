"""The episode projector: one episode per conversation, and the entities it mentioned (pure).

An episode exists from the first event that names its conversation: the first message, or
a fact or entity recorded with that `episode`. Its id is the episode stream's,
`uuid5(NS, "episode/{conversation}")`, whichever event came first, so ensuring it again
changes nothing. A fact asserted in it links its two ends to it through the fact's own row
(its `episode`); entities observed in it, named by its messages or at the ends of a fact
reinforced in it are linked by rows of their own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final
from uuid import UUID

import msgspec

from apexmem.domain.identities import episode_id
from apexmem.events.envelope import RecordedEvent
from apexmem.events.episode import EntitiesMentioned, EpisodeStarted

__all__ = ["Linked", "entities_mentioned", "episode_started", "linked"]


class Linked(msgspec.Struct, frozen=True, gc=False):
    """An episode was heard of (conversation known), and these entities were mentioned in it."""

    episode_id: UUID
    conversation: str | None
    """None when the event does not say (the episode's own stream already started it)."""
    entity_ids: tuple[UUID, ...]
    at: datetime
    position: int
    fact_id: UUID | None = None
    """Also the entities at both ends of this fact version (a reinforcement names no entity
    itself; the read model knows the version's ends)."""


def linked(
    event: RecordedEvent, *entity_ids: UUID | None, fact: UUID | None = None
) -> list[Linked]:
    """The link an event recorded with an `episode` makes to the entities it names; else none."""
    conversation = event.episode
    if conversation is None:
        return []
    episode = _EPISODES.get(conversation)
    if episode is None:  # a conversation's events come together: its id is derived once
        if len(_EPISODES) >= _MEMO_SIZE:
            _EPISODES.clear()
        episode = _EPISODES[conversation] = episode_id(conversation)
    named = tuple(filter(None, entity_ids))  # ids are never false; None is
    return [Linked(episode, conversation, named, event.recorded_at, event.position, fact)]


_EPISODES: dict[str, UUID] = {}
"""Conversation -> episode id, a memo (uuid5 costs more than the rest of a link)."""
_MEMO_SIZE: Final = 4_096


def episode_started(event: RecordedEvent, data: EpisodeStarted) -> list[Linked]:
    """The episode's own stream started: its conversation is known from here."""
    return [Linked(event.stream_id, data.conversation, (), event.recorded_at, event.position)]


def entities_mentioned(event: RecordedEvent, data: EntitiesMentioned) -> list[Linked]:
    """Entities a message of the episode mentioned."""
    entities = tuple(dict.fromkeys(data.entity_ids))
    return [Linked(event.stream_id, None, entities, event.recorded_at, event.position)]
