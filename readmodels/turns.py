"""What the RPE gate needs to know of a conversation before a message: its recent turns,
what became of each, and how many were skipped since the last one extracted."""

from __future__ import annotations

from typing import Final
from uuid import UUID

import msgspec
from sqlalchemy import Connection, func, select

from apexmem.domain.rpe import Outcome
from apexmem.readmodels.tables import extractions, messages

__all__ = ["PriorTurn", "prior_outcomes", "skipped_in_row"]


class PriorTurn(msgspec.Struct, frozen=True):
    """A message said before another in its conversation, and what became of it."""

    text: str
    outcome: Outcome


_OUTCOME: Final = (
    select(
        messages.c.text,
        messages.c.position,
        extractions.c.message_id.label("verdict"),
        extractions.c.flagged,
        extractions.c.surprise,
    )
    .select_from(messages)
    .outerjoin(extractions, extractions.c.message_id == messages.c.message_id)
)


def prior_outcomes(
    connection: Connection, episode_id: UUID, *, before: int, limit: int
) -> list[PriorTurn]:
    """The `limit` messages of the episode recorded before log position `before`, oldest
    first: read (extracted), flagged, or skipped (by the gate, or not read yet)."""
    statement = (
        _OUTCOME.where(messages.c.episode_id == episode_id)
        .where(messages.c.position < before)
        .order_by(messages.c.position.desc())
        .limit(limit)
    )
    rows = list(connection.execute(statement))
    return [PriorTurn(r.text, _outcome(r.verdict, r.flagged, r.surprise)) for r in reversed(rows)]


def skipped_in_row(connection: Connection, episode_id: UUID, *, before: int) -> int:
    """How many messages of the episode before log position `before` came after its last
    extracted one and were skipped (by the gate, or not read yet); flagged ones not counted."""
    extracted = (
        select(func.max(messages.c.position))
        .select_from(messages)
        .join(extractions, extractions.c.message_id == messages.c.message_id)
        .where(messages.c.episode_id == episode_id)
        .where(messages.c.position < before)
        .where(extractions.c.flagged.is_(None))
        .where(extractions.c.surprise.is_(None))
        .scalar_subquery()
    )
    statement = (
        select(func.count())
        .select_from(messages)
        .outerjoin(extractions, extractions.c.message_id == messages.c.message_id)
        .where(messages.c.episode_id == episode_id)
        .where(messages.c.position < before)
        .where(messages.c.position > func.coalesce(extracted, -1))
        .where(extractions.c.flagged.is_(None))
    )
    return int(connection.execute(statement).scalar_one())


def _outcome(verdict: UUID | None, flagged: str | None, surprise: float | None) -> Outcome:
    if verdict is None or surprise is not None:
        return Outcome.SKIPPED
    return Outcome.FLAGGED if flagged is not None else Outcome.EXTRACTED
