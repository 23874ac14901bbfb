"""Extraction in the read models: the messages no extractor has read yet, and the names known."""

from __future__ import annotations

from datetime import datetime
from typing import Final
from uuid import UUID

import msgspec
from sqlalchemy import Connection, func, select

from apexmem.domain.extraction import PRIOR_TURNS, KnownName, Utterance
from apexmem.domain.merges import followed
from apexmem.readmodels.tables import aliases, entities, episodes, extractions, messages

__all__ = [
    "PendingMessage",
    "known_names",
    "pending_count",
    "pending_messages",
    "prior_turns",
    "speakers",
]


class PendingMessage(msgspec.Struct, frozen=True, kw_only=True):
    """A stored message no extractor has read, with its conversation and log position."""

    message_id: UUID
    episode_id: UUID
    conversation: str
    speaker: str
    text: str
    at: datetime
    ref: str | None
    position: int

    def utterance(
        self, *, speaker_entity: str | None = None, context: tuple[Utterance, ...] = ()
    ) -> Utterance:
        """The message as an extractor sees it."""
        return Utterance(
            message_id=self.message_id,
            conversation=self.conversation,
            speaker=self.speaker,
            text=self.text,
            at=self.at,
            ref=self.ref,
            speaker_entity=speaker_entity,
            context=context,
        )


_PENDING: Final = (
    select(
        messages.c.message_id,
        messages.c.episode_id,
        episodes.c.conversation,
        messages.c.speaker,
        messages.c.text,
        messages.c.at,
        messages.c.ref,
        messages.c.position,
    )
    .join(episodes, episodes.c.episode_id == messages.c.episode_id)
    .outerjoin(extractions, extractions.c.message_id == messages.c.message_id)
    .where(extractions.c.message_id.is_(None))
)


def pending_messages(connection: Connection, *, after: int = 0, limit: int) -> list[PendingMessage]:
    """Messages with no extraction verdict, recorded after log position `after`, oldest first."""
    statement = (
        _PENDING.where(messages.c.position > after).order_by(messages.c.position).limit(limit)
    )
    return [
        msgspec.convert(row, PendingMessage, from_attributes=True)
        for row in connection.execute(statement)
    ]


def prior_turns(
    connection: Connection, message: PendingMessage, *, limit: int = PRIOR_TURNS
) -> tuple[Utterance, ...]:
    """The `limit` messages of `message`'s conversation recorded before it, oldest first."""
    statement = (
        select(
            messages.c.message_id,
            messages.c.speaker,
            messages.c.text,
            messages.c.at,
            messages.c.ref,
        )
        .where(messages.c.episode_id == message.episode_id)
        .where(messages.c.position < message.position)
        .order_by(messages.c.position.desc())
        .limit(limit)
    )
    rows = list(connection.execute(statement))
    return tuple(
        Utterance(
            message_id=r.message_id,
            conversation=message.conversation,
            speaker=r.speaker,
            text=r.text,
            at=r.at,
            ref=r.ref,
        )
        for r in reversed(rows)
    )


def pending_count(connection: Connection) -> int:
    """How many messages no extractor has read yet."""
    statement = select(func.count()).select_from(_PENDING.subquery())
    return int(connection.execute(statement).scalar_one())


def speakers(connection: Connection) -> list[str]:
    """Every speaker of a stored message, once each, in name order."""
    statement = select(messages.c.speaker).distinct().order_by(messages.c.speaker)
    return list(connection.execute(statement).scalars())


def known_names(connection: Connection) -> dict[str, KnownName]:
    """Every name the memory knows (normalized alias) to the entity it names now.

    Merged entities' names lead to the entity they were merged into; archived entities'
    names are left out. A name claimed in two entity types names the first one claimed.
    """
    rows = connection.execute(
        select(
            entities.c.entity_id,
            entities.c.name,
            entities.c.entity_type,
            entities.c.merged_into,
            entities.c.archived_at,
        )
    )
    held = {r.entity_id: r for r in rows}
    into = {e: r.merged_into for e, r in held.items() if r.merged_into is not None}
    known: dict[str, KnownName] = {}
    claims = select(aliases.c.alias, aliases.c.entity_id).order_by(aliases.c.position)
    for alias, entity in connection.execute(claims):
        target = held.get(followed(entity, into.get))
        if target is not None and target.archived_at is None:
            known.setdefault(alias, KnownName(target.name, target.entity_type))
    return known
