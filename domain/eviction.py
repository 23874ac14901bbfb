"""Eviction (the seeds' graph eviction, DESIGN 9): which fact versions and entities leave
the read models. Pure: the moment and what the read models hold are passed in.

Three rules, as the reference runs them, but nothing is deleted: each choice becomes an
archive event, so the log, `history` and views of earlier moments keep everything.

1. Expired versions: a believed version that ended in valid time more than the retention
   ago, in a state the store has held for longer than the retention.
2. Orphans: entities with no active fact (at either end) not seen for the retention.
3. The cap: past `max_entities` active entities, those with the fewest active facts go
   first, then the least recently seen; their active facts go with them, so the active
   graph never has an edge to an entity it no longer shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Final, NamedTuple
from uuid import UUID

import msgspec

__all__ = [
    "CAPPED",
    "EXPIRED",
    "ORPHAN",
    "EntityActivity",
    "EvictionPlan",
    "ExpiredVersion",
    "FactChoice",
    "plan_eviction",
]

EXPIRED: Final = "expired"
ORPHAN: Final = "orphan"
CAPPED: Final = "over max_entities"


class ExpiredVersion(NamedTuple):
    """A believed version closed in valid time, as the read model holds it now."""

    fact_id: UUID
    slot_id: UUID
    valid_until: datetime
    state_since: datetime
    """When the store came to hold the version's current state (its open row)."""


class EntityActivity(NamedTuple):
    """An active entity (not merged away, not archived), its merged entities counted in."""

    entity_id: UUID
    last_seen: datetime
    active_facts: int
    """Believed, open-ended facts with the entity (or one merged into it) at either end."""


class FactChoice(NamedTuple):
    """A fact version to archive, its slot (the stream the event goes to) and why."""

    fact_id: UUID
    slot_id: UUID
    reason: str


class EvictionPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What one eviction archives: fact versions and entities, each with its reason."""

    facts: list[FactChoice]
    entities: list[tuple[UUID, str]]
    """(entity id, reason)."""

    def count(self, reason: str) -> int:
        """Fact versions and entities archived for `reason` (EXPIRED, ORPHAN or CAPPED)."""
        return sum(f.reason.startswith(reason) for f in self.facts) + sum(
            r.startswith(reason) for _, r in self.entities
        )


def plan_eviction(
    *,
    now: datetime,
    retention_days: int,
    max_entities: int,
    expired: Sequence[ExpiredVersion],
    activity: Sequence[EntityActivity],
) -> tuple[EvictionPlan, list[UUID]]:
    """The plan, and the entities capped (whose active facts the caller adds as CAPPED).

    `max_entities = 0` means no cap. Ties are broken by id, so a plan is deterministic.
    """
    cutoff = now - timedelta(days=retention_days)
    facts = [
        FactChoice(v.fact_id, v.slot_id, f"{EXPIRED}: ended over {retention_days} days ago")
        for v in sorted(expired, key=lambda v: (v.slot_id, v.fact_id))
        if v.valid_until < cutoff and v.state_since < cutoff
    ]
    orphans = sorted(
        (a for a in activity if a.active_facts == 0 and a.last_seen < cutoff),
        key=lambda a: a.entity_id,
    )
    entities = [(a.entity_id, f"{ORPHAN}: not seen for {retention_days} days") for a in orphans]
    gone = {a.entity_id for a in orphans}
    remaining = [a for a in activity if a.entity_id not in gone]
    capped: list[UUID] = []
    if max_entities > 0 and len(remaining) > max_entities:
        order = sorted(remaining, key=lambda a: (a.active_facts, a.last_seen, a.entity_id))
        capped = [a.entity_id for a in order[: len(remaining) - max_entities]]
        entities += [(e, f"{CAPPED} ({max_entities})") for e in capped]
    return EvictionPlan(facts=facts, entities=entities), capped
