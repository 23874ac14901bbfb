"""Episodes in the read models: the conversations an entity was mentioned in."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final
from uuid import UUID

import msgspec
from sqlalchemy import Connection, func, select

from apexmem.readmodels.tables import episode_entities, episodes, messages

__all__ = ["EpisodeRow", "episodes_of"]

_CHUNK: Final = 400


class EpisodeRow(msgspec.Struct, frozen=True, kw_only=True):
    """An episode (one conversation) and when it first mentioned the entity asked about."""

    episode_id: UUID
    conversation: str
    started_at: datetime
    """When the memory first heard of the conversation (a message, a fact or an entity)."""
    mentioned_at: datetime
    """When the conversation first mentioned the entity (or an entity merged into it)."""
    messages: int
    """Messages of the conversation stored (as known at the time asked)."""


def episodes_of(
    connection: Connection, ids: Sequence[UUID], *, known_at: datetime | None = None
) -> list[EpisodeRow]:
    """The episodes that mentioned any of `ids`, first mentioned first.

    Pass an entity with the entities merged into it: their mentions count as its own.
    """
    first = func.min(episode_entities.c.linked_at).label("mentioned_at")
    statement = (
        select(episodes.c.episode_id, episodes.c.conversation, episodes.c.started_at, first)
        .join(episodes, episodes.c.episode_id == episode_entities.c.episode_id)
        .where(episode_entities.c.entity_id.in_(list(dict.fromkeys(ids))))
        .group_by(episodes.c.episode_id)
        .order_by(first, episodes.c.episode_id)
    )
    if known_at is not None:
        statement = statement.where(
            episode_entities.c.linked_at <= known_at, episodes.c.started_at <= known_at
        )
    rows = connection.execute(statement).all()
    counts = _message_counts(connection, [r.episode_id for r in rows], known_at)
    return [
        EpisodeRow(
            episode_id=r.episode_id,
            conversation=r.conversation,
            started_at=r.started_at,
            mentioned_at=r.mentioned_at,
            messages=counts.get(r.episode_id, 0),
        )
        for r in rows
    ]


def _message_counts(
    connection: Connection, ids: list[UUID], known_at: datetime | None
) -> dict[UUID, int]:
    counts: dict[UUID, int] = {}
    for i in range(0, len(ids), _CHUNK):
        statement = (
            select(messages.c.episode_id, func.count())
            .where(messages.c.episode_id.in_(ids[i : i + _CHUNK]))
            .group_by(messages.c.episode_id)
        )
        if known_at is not None:
            statement = statement.where(messages.c.recorded_at <= known_at)
        counts.update((r[0], int(r[1])) for r in connection.execute(statement))
    return counts
