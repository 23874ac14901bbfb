"""Events of an entity stream and of an alias stream."""

from __future__ import annotations

from uuid import UUID

from apexmem.events.base import Event

__all__ = ["AliasClaimed", "EntityArchived", "EntityMerged", "EntityObserved"]


class EntityObserved(Event, frozen=True, kw_only=True, tag="entity-observed.v1"):
    """An entity was seen: first at creation, again when its summary changes or when it is
    observed after it was archived (which brings it back)."""

    entity_id: UUID
    entity_type: str
    canonical_name: str
    name: str
    summary: str | None = None
    anew: bool = False
    """True when the entity's stream held only erased records (`apexmem forget`): this
    observation makes the entity again, though its version is not 1."""


class EntityMerged(Event, frozen=True, kw_only=True, tag="entity-merged.v1"):
    """An entity was merged forward into another; its names and facts now resolve there."""

    entity_id: UUID
    into: UUID
    reason: str | None = None


class EntityArchived(Event, frozen=True, kw_only=True, tag="entity-archived.v1"):
    """An entity left the active views (eviction); the log keeps all of it."""

    entity_id: UUID
    reason: str


class AliasClaimed(Event, frozen=True, kw_only=True, tag="alias-claimed.v1"):
    """A name of one entity type was claimed by an entity (first claim wins)."""

    alias: str
    name: str
    entity_type: str
    entity_id: UUID
