"""Counts of the current-graph read model, for `apexmem stats`."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, func, not_, select

from apexmem.readmodels.communities import community_count
from apexmem.readmodels.decay import Fading
from apexmem.readmodels.eviction import archived_counts
from apexmem.readmodels.extraction import pending_count
from apexmem.readmodels.facts import valid
from apexmem.readmodels.rows import GraphStats
from apexmem.readmodels.store import tracked_position
from apexmem.readmodels.tables import (
    GRAPH,
    aliases,
    entities,
    episodes,
    extractions,
    facts,
    messages,
)

__all__ = ["graph_stats"]


def graph_stats(
    connection: Connection, *, fading: Fading | None = None, now: datetime | None = None
) -> GraphStats:
    """Entities, aliases, fact versions and states, current facts (believed and valid at
    `now`; open-ended ones when None), messages, communities, archived versions and
    entities, messages the RPE gate skipped, and (given `fading`) the current facts that
    faded."""

    def count(statement: object) -> int:
        return int(connection.execute(statement).scalar() or 0)  # type: ignore[call-overload]

    current = (
        select(func.count())
        .select_from(facts)
        .where(
            facts.c.expired_at.is_(None),
            facts.c.standing == "believed",
            valid(now),
        )
    )
    archived_facts, archived_entities = archived_counts(connection)
    return GraphStats(
        entities=count(select(func.count()).select_from(entities)),
        aliases=count(select(func.count()).select_from(aliases)),
        fact_versions=count(select(func.count(func.distinct(facts.c.fact_id)))),
        fact_states=count(select(func.count()).select_from(facts)),
        current_facts=count(current),
        episodes=count(select(func.count()).select_from(episodes)),
        messages=count(select(func.count()).select_from(messages)),
        position=tracked_position(connection, GRAPH),
        communities=community_count(connection),
        faded_facts=0 if fading is None else count(current.where(not_(fading.condition()))),
        archived_facts=archived_facts,
        archived_entities=archived_entities,
        gated_messages=count(
            select(func.count()).select_from(extractions).where(extractions.c.surprise.isnot(None))
        ),
        unextracted_messages=pending_count(connection),
    )
