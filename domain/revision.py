"""Belief revision (Kumiho, as Zeph's `find_superseded_edges` does it), pure parts.

A new fact contradicts an active one (believed, and holding when the new one starts:
open-ended, or ending later) when both join the same subject to the same object
with the same edge type, their relations are of one domain (equal, one inside the other,
or a normalized Levenshtein similarity of at least 0.5: `likes`/`dislikes`,
`prefers`/`prefers_strongly`, not `works_at`/`knows`), and their sentences are similar
(cosine at or above `[memory.graph.belief_revision] similarity_threshold`). The old
version is then closed where the new one starts, and the verdict recorded. A new fact that
starts before a belief it contradicts (it arrived late) ends where that one starts, as a
late version does on a single-valued slot's timeline: the order facts arrive in does not
change what is believed when.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final
from uuid import UUID

from apexmem.domain.state import FactVersion
from apexmem.events.base import Event
from apexmem.events.fact import FactSuperseded
from apexmem.events.similarity import FactContradicted

__all__ = [
    "RELATION_DOMAIN",
    "decide_late",
    "decide_revision",
    "relation_similarity",
    "same_domain",
]

RELATION_DOMAIN: Final = 0.5
"""Normalized Levenshtein similarity at or above which two relations share a domain."""


def relation_similarity(a: str, b: str) -> float:
    """`1 - levenshtein(a, b) / max(len)`: 1.0 for equal strings (and two empty ones)."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    previous = list(range(len(b) + 1))
    for i, left in enumerate(a, start=1):
        current = [i]
        for j, right in enumerate(b, start=1):
            cost = 0 if left == right else 1
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost))
        previous = current
    return 1.0 - previous[-1] / longest


def same_domain(a: str, b: str) -> bool:
    """Equal, one contains the other, or similar enough by edit distance."""
    return a == b or a in b or b in a or relation_similarity(a, b) >= RELATION_DOMAIN


def decide_revision(
    old: FactVersion, *, by: UUID, starts: datetime, score: float, model: str
) -> list[Event]:
    """Close an active version contradicted by a newer fact starting at `starts`: an
    open-ended one, or one that was to end later (a belief true until 2030).

    Nothing when the old version is no longer believed, ends by `starts`, or does not start
    before the new one (a contradiction never rewrites the past).
    """
    if old.standing != "believed" or (old.valid_until is not None and old.valid_until <= starts):
        return []
    if old.superseded_by_key is not None or old.valid_from >= starts:
        return []
    return [
        FactContradicted(fact_id=old.fact_id, by=by, score=max(-1.0, min(1.0, score)), model=model),
        FactSuperseded(fact_id=old.fact_id, superseded_by=by, valid_until=starts),
    ]


def decide_late(
    later: FactVersion, *, fact: UUID, starts: datetime, score: float, model: str
) -> tuple[datetime, Event] | None:
    """Where a new fact starting at `starts` must end, contradicted by a belief that starts
    after it, and the verdict to record on the new fact; None when `later` does not."""
    if later.standing != "believed" or later.valid_from <= starts:
        return None
    verdict = FactContradicted(
        fact_id=fact, by=later.fact_id, score=max(-1.0, min(1.0, score)), model=model
    )
    return later.valid_from, verdict
