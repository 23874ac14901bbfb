"""What a recall returns: hits (facts or messages) with their score, why and provenance."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Literal, overload
from uuid import UUID

import msgspec

from apexmem.domain.recall import format_lines
from apexmem.readmodels.rows import FactRow, MessageRow
from apexmem.service.arguments import checked_count
from apexmem.service.trace import TraceStage

__all__ = ["Provenance", "Recall", "RecallHit", "format_context", "when"]


class Provenance(msgspec.Struct, frozen=True, kw_only=True):
    """Where a hit came from: who said it, in which conversation, and the events behind it."""

    episode: str | None
    """The conversation (episode) it was learned in or said in."""
    actor: str | None
    """The agent (or, for a message, the speaker) it came from."""
    ref: str | None
    """The caller's external reference (a message id, a turn id such as "D1:3")."""
    recorded_at: datetime
    """When the store learned it (in the state recalled)."""
    positions: list[int]
    """Log positions of the events that made it what it is, oldest first."""


class RecallHit(msgspec.Struct, frozen=True, kw_only=True):
    """One recalled fact or message."""

    kind: Literal["fact", "message"]
    item_id: UUID
    """The fact version's id, or the message's."""
    text: str
    """The fact's sentence, or the message's text."""
    score: float
    """Its fused score (reciprocal rank fusion over the lists that found it; higher is better)."""
    confidence: float
    """The fact's confidence (1.0 for a message)."""
    why: list[str]
    """Why it is here: the lists that found it and how (full text, vector, graph hop n ...)."""
    provenance: Provenance
    fact: FactRow | None = None
    message: MessageRow | None = None


class Recall(msgspec.Struct, frozen=True, kw_only=True):
    """The hits of one recall, best first; iterate, index or take `len` as of a list."""

    hits: list[RecallHit]
    cut_short: bool = False
    """The time budget ended the recall early: these are the hits found by then."""
    edge_types: list[str] = []
    """The edge types the graph expansion walked (asked for, or chosen by the router)."""
    seeds: list[str] = []
    """The entities the graph expansion started from, strongest first."""
    trace: list[TraceStage] | None = None
    """Each stage's best candidates and milliseconds, when asked for (`trace=True`)."""

    def __iter__(self) -> Iterator[RecallHit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    @overload
    def __getitem__(self, index: int) -> RecallHit: ...
    @overload
    def __getitem__(self, index: slice) -> list[RecallHit]: ...
    def __getitem__(self, index: int | slice) -> RecallHit | list[RecallHit]:
        return self.hits[index]


def format_context(hits: Recall | list[RecallHit], *, budget_chars: int = 2_000) -> str:
    """`- <text> [when] (confidence: 0.95)` per hit, best first, within `budget_chars`
    characters.

    Newlines and angle brackets in stored text become spaces, so nothing recalled can
    open a new prompt section. A fact says when it held (`[since 2024-06-01]`,
    `[2019-03-01 to 2021-06-30]`); a message reads `<speaker>: <text> [said 2023-05-08]`.
    """
    checked_count("budget_chars", budget_chars)
    return format_lines(
        ((f"{_said(h)} [{when(h)}]", h.confidence) for h in hits), budget_chars=budget_chars
    )


def when(hit: RecallHit) -> str:
    """When a recalled fact held or a message was said, as dates (UTC)."""
    if hit.message is not None:
        return f"said {_day(hit.message.at)}"
    assert hit.fact is not None
    start, end = hit.fact.valid_from, hit.fact.valid_until
    return f"since {_day(start)}" if end is None else f"{_day(start)} to {_day(end)}"


def _said(hit: RecallHit) -> str:
    return hit.text if hit.message is None else f"{hit.message.speaker}: {hit.text}"


def _day(moment: datetime) -> str:
    return moment.date().isoformat()
