"""Counts of the current-graph read model, for `apexmem stats`."""

from __future__ import annotations

from sqlalchemy import Connection, func, select

from apexmem.readmodels.communities import community_count
from apexmem.readmodels.rows import GraphStats
from apexmem.readmodels.store import tracked_position
from apexmem.readmodels.tables import GRAPH, aliases, entities, episodes, facts, messages

__all__ = ["graph_stats"]


def graph_stats(connection: Connection) -> GraphStats:
    """Entities, aliases, fact versions and states, current facts, messages, communities."""

    def count(statement: object) -> int:
        return int(connection.execute(statement).scalar() or 0)  # type: ignore[call-overload]

    current = (
        select(func.count())
        .select_from(facts)
        .where(
            facts.c.expired_at.is_(None),
            facts.c.standing == "believed",
            facts.c.valid_until.is_(None),
        )
    )
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
    )
