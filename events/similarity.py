"""Verdicts that came from similarity of embeddings, recorded so replay never embeds."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

import msgspec

from apexmem.events.base import Event, Probability

__all__ = ["EntityMatched", "FactContradicted", "NotesLinked", "Verdict"]

Verdict = Literal["same", "different"]
"""same: the names mean one entity (a merge follows); different: they are kept apart."""

Cosine = Annotated[float, msgspec.Meta(ge=-1.0, le=1.0)]


class EntityMatched(Event, frozen=True, kw_only=True, tag="entity-matched.v1"):
    """A new entity's name was compared by embedding with an existing entity of its type.

    Appended on the new entity's stream right after its first observation. `judge` is
    `threshold` when the score alone decided (at or above the merge threshold), else the
    disambiguator's name. A `same` verdict is followed by the entity's merge into
    `candidate`.
    """

    entity_id: UUID
    candidate: UUID
    score: Cosine
    verdict: Verdict
    judge: str
    model: str


class FactContradicted(Event, frozen=True, kw_only=True, tag="fact-contradicted.v1"):
    """Belief revision: a newer fact about the same subject and object contradicts this one.

    Appended on the old fact's slot, before the `fact-superseded.v1` that closes it at the
    newer fact's start (belief revision, `[memory.graph.belief_revision]`).
    """

    fact_id: UUID
    by: UUID
    score: Cosine
    model: str


class NotesLinked(Event, frozen=True, kw_only=True, tag="notes-linked.v1"):
    """A note-linking pass looked at the entities first seen up to `through` (A-MEM).

    Appended right after the append of its `similar_to` facts (semantic facts whose
    confidence is the cosine), on the note-linking stream; the next pass starts after
    `through`.
    """

    through: Annotated[int, msgspec.Meta(ge=0)]
    entities: Annotated[int, msgspec.Meta(ge=0)]
    links: Annotated[int, msgspec.Meta(ge=0)]
    threshold: Probability
    model: str
