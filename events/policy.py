"""Events of the policy stream, the usage stream and community streams."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

import msgspec

from apexmem.events.base import Event
from apexmem.events.timeutil import UtcDateTime

__all__ = [
    "CommunitySummarized",
    "DecayRateSet",
    "FactsRetrieved",
    "RelationMapped",
    "RetrievalCountsDecayed",
]


class RelationMapped(Event, frozen=True, kw_only=True, tag="relation-mapped.v1"):
    """The ontology learned a canonical relation, its aliases and its cardinality."""

    canonical: str
    aliases: list[str] = []
    cardinality: Literal["one", "many"]


class DecayRateSet(Event, frozen=True, kw_only=True, tag="decay-rate-set.v1"):
    """The confidence decay rate (per day) of one edge type changed."""

    edge_type: str
    rate: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)]


class FactsRetrieved(Event, frozen=True, kw_only=True, tag="facts-retrieved.v1"):
    """A recall returned these fact versions (feeds A-MEM retrieval counts)."""

    fact_ids: list[UUID]


class RetrievalCountsDecayed(Event, frozen=True, kw_only=True, tag="retrieval-counts-decayed.v1"):
    """Retrieval counts of facts not retrieved since `cutoff` were multiplied by `factor`."""

    factor: Annotated[float, msgspec.Meta(gt=0.0, le=1.0)]
    cutoff: UtcDateTime


class CommunitySummarized(Event, frozen=True, kw_only=True, tag="community-summarized.v1"):
    """A detected community was named and summarized (recorded, so replay calls no model)."""

    fingerprint: str
    entity_ids: list[UUID]
    name: str
    summary: str
    summarizer: str
