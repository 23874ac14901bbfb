"""What each write returns: one frozen result per command."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

import msgspec

from apexmem.readmodels.rows import GraphStats

__all__ = [
    "AliasRef",
    "EntityRef",
    "FactRef",
    "LinkRef",
    "MemoryStats",
    "MergeRef",
    "MessageRef",
    "PolicyRef",
    "Result",
    "RetractRef",
]


# gc=False: one per command, plain values that never form a reference cycle.
class _Result(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", gc=False):
    position: int
    """Log position of the event that carries this result (0 when nothing was written)."""


class FactRef(_Result, frozen=True, kw_only=True, tag="fact"):
    """An assertion's result: the version it created or reinforced, and how."""

    fact_id: UUID
    slot_id: UUID
    subject_id: UUID
    object_id: UUID | None
    outcome: Literal["created", "reinforced", "superseded", "historical", "alternative"]
    supersedes: UUID | None = None


class EntityRef(_Result, frozen=True, kw_only=True, tag="entity"):
    """An entity observed: created now, or found (by name, alias or merge)."""

    entity_id: UUID
    created: bool


class AliasRef(_Result, frozen=True, kw_only=True, tag="alias"):
    """An alias claim: claimed now, already ours, or refused because another entity owns it."""

    alias: str
    entity_id: UUID
    owner: UUID
    outcome: Literal["claimed", "unchanged", "refused"]


class RetractRef(_Result, frozen=True, kw_only=True, tag="retract"):
    """A retraction: the version it ended or withdrew."""

    fact_id: UUID
    slot_id: UUID


class MessageRef(_Result, frozen=True, kw_only=True, tag="message"):
    """A recorded message and its episode."""

    message_id: UUID
    episode_id: UUID


class MergeRef(_Result, frozen=True, kw_only=True, tag="merge"):
    """A merge-forward of one entity into another."""

    source_id: UUID
    target_id: UUID


class PolicyRef(_Result, frozen=True, kw_only=True, tag="policy"):
    """A policy change (ontology mapping or decay rate)."""


class LinkRef(_Result, frozen=True, kw_only=True, tag="link"):
    """A link between two facts (position 0: it already held with that strength)."""

    source: UUID
    target: UUID
    link_type: str
    strength: float


Result = FactRef | EntityRef | AliasRef | RetractRef | MessageRef | MergeRef | PolicyRef | LinkRef


class MemoryStats(msgspec.Struct, frozen=True, kw_only=True):
    """Counts and sizes of one memory: the log, the read models, and how far behind they are."""

    events: int
    last_position: int
    log_bytes: int
    readmodel_bytes: int
    projection_lag: int
    graph: GraphStats
