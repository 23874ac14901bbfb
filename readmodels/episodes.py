"""Episodes in the read models: the conversations an entity was mentioned in."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final
from uuid import UUID

import msgspec
from sqlalchemy import Connection, func, or_, select

from apexmem.domain.identities import episode_id
from apexmem.readmodels.tables import episode_entities, episodes, facts, messages

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
    wanted = list(dict.fromkeys(ids))
    first: dict[UUID, datetime] = {}
    for episode, at in _linked(connection, wanted, known_at):
        _keep_first(first, episode, at)
    for conversation, at in _asserted_in(connection, wanted, known_at):
        _keep_first(first, episode_id(conversation), at)
    rows = sorted(_episodes(connection, list(first), known_at), key=lambda r: (first[r[0]], r[0]))
    counts = _message_counts(connection, [r[0] for r in rows], known_at)
    return [
        EpisodeRow(
            episode_id=episode,
            conversation=conversation,
            started_at=started_at,
            mentioned_at=first[episode],
            messages=counts.get(episode, 0),
        )
        for episode, conversation, started_at in rows
    ]


def _episodes(
    connection: Connection, ids: list[UUID], known_at: datetime | None
) -> list[tuple[UUID, str, datetime]]:
    """(id, conversation, started at) of the episodes `ids` the memory knew of at `known_at`."""
    found: list[tuple[UUID, str, datetime]] = []
    for i in range(0, len(ids), _CHUNK):
        statement = select(
            episodes.c.episode_id, episodes.c.conversation, episodes.c.started_at
        ).where(episodes.c.episode_id.in_(ids[i : i + _CHUNK]))
        if known_at is not None:
            statement = statement.where(episodes.c.started_at <= known_at)
        found += [(r[0], r[1], r[2]) for r in connection.execute(statement)]
    return found


def _keep_first(first: dict[UUID, datetime], episode: UUID, at: datetime) -> None:
    known = first.get(episode)
    if known is None or at < known:
        first[episode] = at


def _linked(
    connection: Connection, ids: list[UUID], known_at: datetime | None
) -> list[tuple[UUID, datetime]]:
    """(episode, first time it linked any of `ids`) from the link rows: entities observed
    in an episode, named by its messages, or at the ends of a fact reinforced in it."""
    at = func.min(episode_entities.c.linked_at)
    statement = (
        select(episode_entities.c.episode_id, at)
        .where(episode_entities.c.entity_id.in_(ids))
        .group_by(episode_entities.c.episode_id)
    )
    if known_at is not None:
        statement = statement.where(episode_entities.c.linked_at <= known_at)
    return [(r[0], r[1]) for r in connection.execute(statement)]


def _asserted_in(
    connection: Connection, ids: list[UUID], known_at: datetime | None
) -> list[tuple[str, datetime]]:
    """(conversation, first time a fact asserted in it had one of `ids` at an end).

    A fact asserted in an episode links its two ends to it: the fact rows say so (each
    version's rows keep the episode and the time it was asserted), so no link row is
    written for them: that would be a row per end of every fact.
    """
    at = func.min(facts.c.asserted_at)
    statement = (
        select(facts.c.episode, at)
        .where(
            or_(facts.c.subject_id.in_(ids), facts.c.object_id.in_(ids)),
            facts.c.episode.is_not(None),
        )
        .group_by(facts.c.episode)
    )
    if known_at is not None:
        statement = statement.where(facts.c.asserted_at <= known_at)
    return [(r[0], r[1]) for r in connection.execute(statement)]


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
