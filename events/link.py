"""The fact-link stream: typed links between two fact versions (seed 004's memory_links).

A link says how one fact stands to another: it supersedes it, was caused by it, is part of
it, relates to it or depends on it. Links between the same two facts share one stream, so a
link told again (another strength, say) is its next version and two writers collide
instead of forking. A link is never removed: a later one of the same type and direction
gives it a new strength.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal
from uuid import UUID

import msgspec

from apexmem.events.base import Event

__all__ = ["LINK_TYPES", "FactLinked", "LinkOrigin", "LinkType"]

LinkType = Literal["supersedes", "caused_by", "part_of", "related_to", "depends_on"]
"""The five link types of seed 004, stored lowercase (given in any case)."""
LINK_TYPES: Final[tuple[LinkType, ...]] = (
    "supersedes",
    "caused_by",
    "part_of",
    "related_to",
    "depends_on",
)
LinkOrigin = Literal["told", "co-occurrence"]
"""told: a caller linked the facts; co-occurrence: the usage pass saw them recalled together."""

Strength = Annotated[float, msgspec.Meta(gt=0.0, le=1.0)]


class FactLinked(Event, frozen=True, kw_only=True, tag="fact-linked.v1"):
    """`source` stands to `target` as `link_type` says (`source` caused_by `target`: the
    target caused the source), with `strength` in (0, 1]."""

    source: UUID
    target: UUID
    link_type: LinkType
    strength: Strength = 1.0
    origin: LinkOrigin = "told"
    recalls: Annotated[int, msgspec.Meta(ge=0)] = 0
    """For a co-occurrence link: the recalls of the pass's window that returned both."""
