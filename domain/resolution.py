"""Entity resolution by similarity: the bands, the Disambiguator port, and the decider.

After alias and canonical lookups fail, a new name is compared by embedding with existing
entities of its type. At or above the merge threshold the new entity is merged forward into
the nearest one; in the ambiguous band a `Disambiguator` decides; below it, nothing is said.
Every verdict is an event (`entity-matched.v1`), so replay never embeds or asks again.
"""

from __future__ import annotations

from typing import Final, Literal, Protocol, runtime_checkable
from uuid import UUID

import msgspec

from apexmem.domain.deciders import decide_merge
from apexmem.domain.state import EntityState
from apexmem.events.base import Event
from apexmem.events.similarity import EntityMatched, Verdict

__all__ = [
    "THRESHOLD_JUDGE",
    "Band",
    "Candidate",
    "Disambiguator",
    "KeepSeparate",
    "Thresholds",
    "band",
    "decide_match",
]

THRESHOLD_JUDGE: Final = "threshold"
"""The judge recorded when the score alone decided (at or above the merge threshold)."""

Band = Literal["merge", "ask", "create"]


class Thresholds(msgspec.Struct, frozen=True):
    """`entity_similarity_threshold` (merge at or above) and `entity_ambiguous_threshold`."""

    merge: float = 0.85
    ambiguous: float = 0.70


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """An existing entity near a new name: what a disambiguator is shown."""

    entity_id: UUID
    entity_type: str
    name: str
    summary: str | None
    score: float


@runtime_checkable
class Disambiguator(Protocol):
    """Decides whether a new name means an existing entity when their similarity is ambiguous.

    A model may stand behind it; its verdict is recorded, so it is asked once per new name.
    """

    @property
    def name(self) -> str:
        """Recorded as the verdict's judge."""
        ...

    def same_entity(self, name: str, summary: str | None, candidate: Candidate) -> bool:
        """Whether `name` (with its summary, if any) is another name of `candidate`."""
        ...


class KeepSeparate:
    """The default disambiguator: never merges; the ambiguous pair is still recorded."""

    @property
    def name(self) -> str:
        """`keep-separate`."""
        return "keep-separate"

    def same_entity(self, name: str, summary: str | None, candidate: Candidate) -> bool:
        """Always False."""
        return False


def band(score: float, thresholds: Thresholds) -> Band:
    """merge at or above `merge`, ask in [ambiguous, merge), create below."""
    if score >= thresholds.merge:
        return "merge"
    if score >= thresholds.ambiguous:
        return "ask"
    return "create"


def decide_match(
    new: EntityState,
    candidate: EntityState,
    *,
    score: float,
    verdict: Verdict,
    judge: str,
    model: str,
) -> list[Event]:
    """The verdict on a new entity and its nearest existing one, then the merge when same."""
    if new.entity_id is None or candidate.entity_id is None:
        raise ValueError("both entities of a match must exist")
    matched = EntityMatched(
        entity_id=new.entity_id,
        candidate=candidate.entity_id,
        score=max(-1.0, min(1.0, score)),
        verdict=verdict,
        judge=judge,
        model=model,
    )
    if verdict == "different":
        return [matched]
    reason = f"similar name ({score:.3f} by {model}, judged by {judge})"
    return [matched, *decide_merge(new, candidate, [candidate.entity_id], reason)]
