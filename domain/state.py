"""Write-side stream states: what a decider needs to know about a stream, and its version."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

import msgspec

from apexmem.events.located import uuid_of_int
from apexmem.events.policy import RelationMapped

__all__ = [
    "AliasState",
    "EntityState",
    "EpisodeState",
    "FactVersion",
    "PolicyState",
    "SlotState",
    "Standing",
]

Standing = Literal["believed", "alternative", "withdrawn"]
"""believed: part of the slot's timeline; alternative: recorded but outranked; withdrawn:
retracted as never true."""

# gc=False on every state: the write path caches up to 200,000 of them, plain values that
# never form a cycle, which the cyclic garbage collector would otherwise walk again and again.


class EntityState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An entity stream folded: who it is, and where it was merged to, if anywhere."""

    version: int = 0
    entity_id: UUID | None = None
    entity_type: str | None = None
    canonical_name: str | None = None
    name: str | None = None
    summary: str | None = None
    merged_into: UUID | None = None
    archived: bool = False


class AliasState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An alias stream folded: the entity that claimed the name first, if any."""

    version: int = 0
    entity_id: UUID | None = None


class FactVersion(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One version of a fact in its slot's timeline."""

    fact_key: int
    """The fact id's int (`fact_id` gives the id). Ids are kept as ints here: a writer's
    state cache holds a version for each of up to hundreds of thousands of facts, and a
    UUID is one more object for each full collection of the cyclic garbage collector to
    walk (an int is not tracked); these ids were most of them."""
    object_key: str
    confidence: float
    valid_from: datetime
    valid_until: datetime | None
    observed_at: datetime
    standing: Standing = "believed"
    superseded_by_key: int | None = None
    """The int of the id of the version that superseded this one, if any."""
    object_id: UUID | None = None
    value: str | None = None
    fact: str = ""
    restarts: tuple[datetime, ...] = ()
    """Later starts claimed by reinforcements, ascending: where the object was seen to hold
    again, which a different object asserted before them must end at."""

    @property
    def fact_id(self) -> UUID:
        """The id of this fact version."""
        return uuid_of_int(self.fact_key)

    def valid_at(self, when: datetime) -> bool:
        """valid_from <= when < valid_until, for a believed version."""
        return (
            self.standing == "believed"
            and self.valid_from <= when
            and (self.valid_until is None or when < self.valid_until)
        )


class SlotState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A fact slot folded: every version, in the order they were asserted."""

    version: int = 0
    versions: tuple[FactVersion, ...] = ()

    def find(self, fact: UUID) -> FactVersion | None:
        """The version with this fact id, if it belongs to this slot."""
        key = fact.int
        return next((v for v in self.versions if v.fact_key == key), None)

    def current(self) -> FactVersion | None:
        """The believed version with no end in valid time, if any."""
        return next(
            (v for v in self.versions if v.standing == "believed" and v.valid_until is None), None
        )


class EpisodeState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An episode stream folded: whether it started and how many messages it holds."""

    version: int = 0
    started: bool = False
    messages: int = 0


class PolicyState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The policy stream folded: ontology mappings and decay rates added by events."""

    version: int = 0
    mappings: tuple[RelationMapped, ...] = ()
    decay_rates: tuple[tuple[str, float], ...] = ()
