"""Events of a fact slot stream: every version of one fact, and its supersession chain."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from apexmem.events.base import Event, Probability
from apexmem.events.timeutil import UtcDateTime

__all__ = [
    "FactArchived",
    "FactAsserted",
    "FactReinforced",
    "FactRetracted",
    "FactSuperseded",
    "Outcome",
]

Outcome = Literal["created", "superseded", "historical", "alternative"]
"""How an assertion entered its slot's valid-time timeline (reinforcements have their own event)."""


class FactAsserted(Event, frozen=True, kw_only=True, tag="fact-asserted.v1"):
    """A new version of a fact entered its slot.

    `valid_until` is set when the version is historical (it ends where the next version
    starts) or was asserted with an end; `supersedes` names the version it closed.
    """

    fact_id: UUID
    subject_id: UUID
    relation: str
    object_id: UUID | None = None
    value: str | None = None
    edge_type: str
    fact: str
    confidence: Probability
    valid_from: UtcDateTime
    valid_until: UtcDateTime | None = None
    observed_at: UtcDateTime
    supersedes: UUID | None = None
    outcome: Outcome
    ref: str | None = None


class FactReinforced(Event, frozen=True, kw_only=True, tag="fact-reinforced.v1"):
    """The same fact was observed again: confidence is the max of both, decay restarts.

    `valid_from` is the start this observation claimed when it is later than the version's
    own: the version still starts where it did, but the slot remembers that the object held
    from there, so a different object asserted between the two starts later ends there.

    `fact` is the sentence this observation was told in when it differs from the version's
    current one (None: the same sentence): from this event on, the version reads so.
    """

    fact_id: UUID
    confidence: Probability
    observed_at: UtcDateTime
    ref: str | None = None
    valid_from: UtcDateTime | None = None
    fact: str | None = None


class FactSuperseded(Event, frozen=True, kw_only=True, tag="fact-superseded.v1"):
    """A version was closed in valid time by a newer one (always appended before it)."""

    fact_id: UUID
    superseded_by: UUID
    valid_until: UtcDateTime


class FactRetracted(Event, frozen=True, kw_only=True, tag="fact-retracted.v1"):
    """A version was retracted: ended at `valid_until`, or withdrawn entirely when it is None."""

    fact_id: UUID
    valid_until: UtcDateTime | None = None
    reason: str


class FactArchived(Event, frozen=True, kw_only=True, tag="fact-archived.v1"):
    """A version left the read models (eviction); the log and history keep it."""

    fact_id: UUID
    reason: str
