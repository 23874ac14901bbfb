"""What read-model queries return: frozen Structs, never live rows."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import msgspec

__all__ = [
    "EntityHit",
    "EntityRow",
    "FactHit",
    "FactRow",
    "GraphStats",
    "MessageHit",
    "MessageRow",
    "Reached",
    "Subgraph",
]


class EntityRow(msgspec.Struct, frozen=True, kw_only=True):
    """An entity as the read model knows it, with the names that resolve to it."""

    entity_id: UUID
    entity_type: str
    canonical_name: str
    name: str
    summary: str | None
    first_seen: datetime
    last_seen: datetime
    aliases: list[str] = []
    merged: list[UUID] = []
    """Entities merged forward into this one (their facts count as this entity's)."""


class FactRow(msgspec.Struct, frozen=True, kw_only=True):
    """One fact version in one known state (see projections.graph for the two time axes)."""

    fact_id: UUID
    slot_id: UUID
    subject_id: UUID
    subject: str
    relation: str
    object_id: UUID | None
    object: str | None
    """The object entity's name, or the literal value, or None for a note about the subject."""
    edge_type: str
    fact: str
    confidence: float
    standing: str
    """believed, alternative (outranked), withdrawn (retracted as never true) or archived."""
    valid_from: datetime
    valid_until: datetime | None
    recorded_at: datetime
    """When the store came to know the version in this state."""
    expired_at: datetime | None
    """When a later event changed that state (None: still what the store believes)."""
    asserted_at: datetime
    observed_at: datetime
    supersedes: UUID | None
    superseded_by: UUID | None
    ref: str | None
    actor: str | None
    episode: str | None
    position: int
    """The log position of the event that gave the version this state."""

    def sentence(self) -> str:
        """`subject relation object` in one line."""
        target = "" if self.object is None else f" {self.object}"
        return f"{self.subject} {self.relation}{target}"


class MessageRow(msgspec.Struct, frozen=True, kw_only=True):
    """A stored message with the conversation (episode) it belongs to."""

    message_id: UUID
    episode_id: UUID
    conversation: str
    speaker: str
    text: str
    at: datetime
    ref: str | None
    recorded_at: datetime
    position: int


class Reached(msgspec.Struct, frozen=True, kw_only=True):
    """An entity reached by a traversal, and its hop distance from the start."""

    entity_id: UUID
    entity_type: str
    name: str
    hops: int


class Subgraph(msgspec.Struct, frozen=True, kw_only=True):
    """What a traversal found: the entities by distance and the edges between them."""

    entities: list[Reached]
    facts: list[FactRow]


class GraphStats(msgspec.Struct, frozen=True, kw_only=True):
    """Counts of the current-graph read model."""

    entities: int
    aliases: int
    fact_versions: int
    fact_states: int
    current_facts: int
    episodes: int
    messages: int
    position: int
    communities: int = 0
    """Live communities (`detect_communities` finds them)."""
    faded_facts: int = 0
    """Current facts whose decayed confidence is under 0.1 (left out of recall)."""
    archived_facts: int = 0
    """Fact versions archived by eviction (out of the read models' views, kept in the log)."""
    archived_entities: int = 0
    """Entities archived by eviction."""
    gated_messages: int = 0
    """Messages the RPE gate skipped as saying little new (`[memory.graph.rpe]`)."""
    unextracted_messages: int = 0
    """Messages no extractor has read yet (`add_messages` reads them in the background;
    `extract_pending` or `apexmem backfill` waits for them)."""


class EntityHit(msgspec.Struct, frozen=True, kw_only=True):
    """An entity a full-text search found, and how well it matched (0 to 1, best first)."""

    entity_id: UUID
    name: str
    entity_type: str
    score: float


class FactHit(msgspec.Struct, frozen=True, kw_only=True):
    """A fact version whose sentence a full-text search found, in the state asked for."""

    fact_id: UUID
    score: float
    row: FactRow


class MessageHit(msgspec.Struct, frozen=True, kw_only=True):
    """A message a full-text search found."""

    message_id: UUID
    episode_id: UUID
    speaker: str
    text: str
    at: datetime
    score: float
