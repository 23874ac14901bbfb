"""The current-graph read model's tables (SQLAlchemy Core), portable to PostgreSQL.

Times are stored as integer microseconds since the epoch (UTC): exact, ordered, indexable
the same way on every backend. The column type refuses naive datetimes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Dialect,
    Float,
    Index,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    Uuid,
    func,
)

from apexmem.events.timeutil import EPOCH, from_micros, require_aware, to_micros

__all__ = [
    "GRAPH",
    "ID",
    "LAYOUT",
    "UtcMicros",
    "aliases",
    "communities",
    "community_members",
    "decay_rates",
    "entities",
    "entity_archives",
    "entity_matches",
    "episode_entities",
    "episodes",
    "extractions",
    "fact_links",
    "facts",
    "layout",
    "mentions",
    "messages",
    "metadata",
    "retrievals",
    "stored_micros",
    "tracking",
    "usage_decays",
]

_MICROSECOND: Final = timedelta(microseconds=1)

GRAPH: Final = "graph"
"""The tracking name of the current-graph projection."""


def stored_micros(value: Any) -> int | None:
    """What a UtcMicros column stores for `value`: microseconds since the epoch, or None.

    A naive datetime is refused. Times already in UTC (every time decoded from the log)
    skip the conversion: this runs for every time written by a catch-up.
    """
    if value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, datetime) and value.tzinfo is UTC:
        return (value - EPOCH) // _MICROSECOND
    return to_micros(require_aware("time", value))


class UtcMicros(TypeDecorator[datetime]):
    """A timezone-aware datetime stored as integer microseconds since the Unix epoch (UTC)."""

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> int | None:
        """Aware datetime -> microseconds; a naive one is refused."""
        return stored_micros(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        """Microseconds -> UTC datetime."""
        return None if value is None else from_micros(value)


ID: Final = Uuid(native_uuid=False)
"""An id column's type: 32 hex digits (CHAR(32)) on every backend, not PostgreSQL's native
uuid: the recall path passes and reads ids as stored (readmodels.prepared)."""

metadata = MetaData()

layout = Table(
    "layout",
    metadata,
    Column("version", BigInteger, primary_key=True),
)
"""One row: the version of these tables' layout the rows were projected with."""

LAYOUT: Final = 3
"""The layout these tables have (1: before `layout` and `entity_archives`; 2: before
`extractions.surprise`). A store found with another is projected again from the log on
open."""

tracking = Table(
    "tracking",
    metadata,
    Column("projection", String(64), primary_key=True),
    Column("position", BigInteger, nullable=False),
)

entities = Table(
    "entities",
    metadata,
    Column("entity_id", ID, primary_key=True),
    Column("entity_type", String(32), nullable=False),
    Column("canonical_name", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("summary", Text),
    Column("first_seen", UtcMicros, nullable=False),
    Column("last_seen", UtcMicros, nullable=False),
    Column("merged_into", ID),
    Column("merged_at", UtcMicros),
    Column("archived_at", UtcMicros),
    Column("position", BigInteger, nullable=False),
)
Index(
    "entities_merged",
    entities.c.merged_into,
    sqlite_where=entities.c.merged_into.is_not(None),
    postgresql_where=entities.c.merged_into.is_not(None),
)
"""Merged entities only (few): who was merged into an entity, without reading the others."""

entity_archives = Table(
    "entity_archives",
    metadata,
    Column("entity_id", ID, primary_key=True),
    Column("position", BigInteger, primary_key=True),
    Column("archived_at", UtcMicros, nullable=False),
    Column("revived_at", UtcMicros),
)
Index(
    "entity_archives_open",
    entity_archives.c.entity_id,
    sqlite_where=entity_archives.c.revived_at.is_(None),
    postgresql_where=entity_archives.c.revived_at.is_(None),
)
"""Every time an entity was archived by eviction (`position`: the archive event) until the
event that observed it again (`revived_at`, None while it stays archived). `entities.archived_at`
says whether it is archived now; these intervals say whether it was as known at any time."""

aliases = Table(
    "aliases",
    metadata,
    Column("alias", Text, primary_key=True),
    Column("entity_type", String(32), primary_key=True),
    Column("name", Text, nullable=False),
    Column("entity_id", ID, nullable=False),
    Column("recorded_at", UtcMicros, nullable=False),
    Column("position", BigInteger, nullable=False),
    Index("aliases_entity", "entity_id"),
)

_RANKED: Final = ("expired_at", "confidence", "fact_id")
_WALKED: Final = ("edge_type", "standing", "valid_from", "valid_until", "observed_at")

facts = Table(
    "facts",
    metadata,
    Column("fact_id", ID, primary_key=True),
    Column("position", BigInteger, primary_key=True),
    Column("slot_id", ID, nullable=False),
    Column("subject_id", ID, nullable=False),
    Column("relation", Text, nullable=False),
    Column("object_id", ID),
    Column("value", Text),
    Column("edge_type", String(16), nullable=False),
    Column("fact", Text, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("standing", String(16), nullable=False),
    Column("valid_from", UtcMicros, nullable=False),
    Column("valid_until", UtcMicros),
    Column("recorded_at", UtcMicros, nullable=False),
    Column("expired_at", UtcMicros),
    Column("asserted_at", UtcMicros, nullable=False),
    Column("observed_at", UtcMicros, nullable=False),
    Column("supersedes", ID),
    Column("superseded_by", ID),
    Column("ref", Text),
    Column("actor", Text),
    Column("episode", Text),
    # Confidence and fact_id too: a recall reads a busy entity's edges most confident first,
    # and finds the ones with a retrieval count without reading the others (readmodels.strongest).
    # Then what a spreading activation weighs and filters by: it reads every believed edge
    # of its active entities from the index alone, without a seek into the table per edge
    # (readmodels.spread_edges).
    Index("facts_subject_walk", "subject_id", *_RANKED, "object_id", *_WALKED, "recorded_at"),
    Index("facts_object_walk", "object_id", *_RANKED, "subject_id", *_WALKED, "recorded_at"),
    Index("facts_slot", "slot_id"),
)

episodes = Table(
    "episodes",
    metadata,
    Column("episode_id", ID, primary_key=True),
    Column("conversation", Text, nullable=False),
    Column("started_at", UtcMicros, nullable=False),
    Column("position", BigInteger, nullable=False),
)

messages = Table(
    "messages",
    metadata,
    Column("message_id", ID, primary_key=True),
    Column("episode_id", ID, nullable=False),
    Column("speaker", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("at", UtcMicros, nullable=False),
    Column("ref", Text),
    Column("recorded_at", UtcMicros, nullable=False),
    Column("position", BigInteger, nullable=False),
    Index("messages_episode", "episode_id", "position"),
)
# A question naming a participant is matched to their turns by name, in any case.
Index("messages_speaker", func.lower(messages.c.speaker))

retrievals = Table(
    "retrievals",
    metadata,
    Column("fact_id", ID, primary_key=True),
    Column("count", Float, nullable=False),
    Column("last_retrieved_at", UtcMicros, nullable=False),
)
"""How often recalls returned each fact version (A-MEM), from the usage events, after the
decay passes (`usage_decays`): whole numbers, as the reference keeps them."""

usage_decays = Table(
    "usage_decays",
    metadata,
    Column("position", BigInteger, primary_key=True),
    Column("factor", Float, nullable=False),
    Column("cutoff", UtcMicros, nullable=False),
    Column("decayed_at", UtcMicros, nullable=False),
    Column("decayed", BigInteger, nullable=False),
)
"""Every retrieval-count decay pass: its factor, the cutoff (facts last retrieved before it
decayed), when it ran and how many counts it multiplied."""

mentions = Table(
    "mentions",
    metadata,
    Column("message_id", ID, primary_key=True),
    Column("entity_id", ID, primary_key=True),
    Column("recorded_at", UtcMicros, nullable=False),
    Index("mentions_entity", "entity_id"),
)

episode_entities = Table(
    "episode_entities",
    metadata,
    Column("episode_id", ID, primary_key=True),
    Column("entity_id", ID, primary_key=True),
    Column("linked_at", UtcMicros, nullable=False),
    Column("position", BigInteger, nullable=False),
    Index("episode_entities_entity", "entity_id"),
)
"""Which entities each episode (conversation) mentioned: the first event that linked them.

Linked by entities observed with that episode, the entities a message of it mentioned and
the ends of facts reinforced in it; linking again changes nothing. The ends of a fact
asserted in it are linked by the fact's rows (`facts.episode`, readmodels.episodes)."""

extractions = Table(
    "extractions",
    metadata,
    Column("message_id", ID, primary_key=True),
    Column("episode_id", ID, nullable=False),
    Column("extractor", Text, nullable=False),
    Column("facts", BigInteger, nullable=False),
    Column("flagged", Text),
    Column("surprise", Float),
    Column("recorded_at", UtcMicros, nullable=False),
    Column("position", BigInteger, nullable=False),
)
"""Messages an extractor has read (the first verdict on each): how many facts came of it, or
the prompt-injection rule that kept it from being read, or the surprise score for which the
RPE gate skipped it. A message without a row is pending."""

communities = Table(
    "communities",
    metadata,
    Column("community_id", ID, primary_key=True),
    Column("fingerprint", String(64), nullable=False),
    Column("name", Text, nullable=False),
    Column("summary", Text, nullable=False),
    Column("summarizer", Text, nullable=False),
    Column("stale", Boolean, nullable=False),
    Column("formed_at", UtcMicros, nullable=False),
    Column("formed_position", BigInteger, nullable=False),
    Column("dissolved_at", UtcMicros),
    Column("version", BigInteger, nullable=False),
    Column("position", BigInteger, nullable=False),
)
"""Communities detected by label propagation, with their recorded summaries.

`stale`: members were assigned since the summary; `version`: events of the community's
stream applied; a dissolved community keeps its row with `dissolved_at` set."""

community_members = Table(
    "community_members",
    metadata,
    Column("community_id", ID, primary_key=True),
    Column("entity_id", ID, primary_key=True),
    Column("position", BigInteger, primary_key=True),
    Column("joined_at", UtcMicros, nullable=False),
    Column("left_at", UtcMicros),
    Column("assigned", Boolean, nullable=False),
    Index("community_members_entity", "entity_id", "left_at"),
)
"""Who belongs to which community: one row per joining (by detection, or assigned by a
neighbour vote), closed by `left_at` when the community is dissolved or formed again
without the entity."""

decay_rates = Table(
    "decay_rates",
    metadata,
    Column("edge_type", String(16), primary_key=True),
    Column("position", BigInteger, primary_key=True),
    Column("rate", Float, nullable=False),
    Column("set_at", UtcMicros, nullable=False),
)
"""Every confidence decay rate (per day) set for an edge type by a policy event, so the rate
in force at any transaction time can be asked (types never set use the configured default)."""

entity_matches = Table(
    "entity_matches",
    metadata,
    Column("entity_id", ID, primary_key=True),
    Column("position", BigInteger, primary_key=True),
    Column("candidate", ID, nullable=False),
    Column("score", Float, nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("judge", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("recorded_at", UtcMicros, nullable=False),
    Index("entity_matches_candidate", "candidate"),
)
"""Verdicts of resolution by similarity: a new entity compared with its nearest existing
one (`same`: merged into it; `different`: kept apart, the pair recorded)."""

fact_links = Table(
    "fact_links",
    metadata,
    Column("position", BigInteger, primary_key=True),
    Column("source_id", ID, nullable=False),
    Column("target_id", ID, nullable=False),
    Column("link_type", String(16), nullable=False),
    Column("strength", Float, nullable=False),
    Column("origin", String(16), nullable=False),
    Column("recorded_at", UtcMicros, nullable=False),
    Index("fact_links_source", "source_id", "position"),
    Index("fact_links_target", "target_id", "position"),
)
"""Every link between two fact versions, one row per `fact-linked.v1`: a link's strength
known at a moment is that of its latest row recorded by then (seed 004's memory_links)."""
