"""Events of an episode stream: one conversation, its messages and the entities they mention."""

from __future__ import annotations

from uuid import UUID

from apexmem.events.base import Event
from apexmem.events.timeutil import UtcDateTime

__all__ = ["EntitiesMentioned", "EpisodeStarted", "MessageRecorded"]


class EpisodeStarted(Event, frozen=True, kw_only=True, tag="episode-started.v1"):
    """The first message of a conversation arrived."""

    episode_id: UUID
    conversation: str


class MessageRecorded(Event, frozen=True, kw_only=True, tag="message-recorded.v1"):
    """A message of the conversation was stored verbatim."""

    message_id: UUID
    speaker: str
    text: str
    at: UtcDateTime
    ref: str | None = None


class EntitiesMentioned(Event, frozen=True, kw_only=True, tag="entities-mentioned.v1"):
    """Entities were found in a message (by an extractor or by the caller)."""

    message_id: UUID
    entity_ids: list[UUID]
