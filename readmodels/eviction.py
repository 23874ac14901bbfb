"""What eviction reads from the current graph (see domain.eviction), and the counts of what
it archived, for `apexmem stats`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final
from uuid import UUID

from sqlalchemy import ColumnElement, Connection, func, or_, select, union_all

from apexmem.domain.eviction import EntityActivity, ExpiredVersion
from apexmem.domain.merges import merge_roots
from apexmem.readmodels.facts import fact_states
from apexmem.readmodels.rows import FactRow
from apexmem.readmodels.tables import entities, facts

__all__ = [
    "active_facts_of",
    "archived_counts",
    "current_rows",
    "entity_activity",
    "expired_versions",
]

_CHUNK: Final = 400


def _active(now: datetime) -> tuple[ColumnElement[bool], ...]:
    """The open row of a believed version valid now or later: an active fact (one that
    ends in valid time after `now` is as active as an open-ended one until then)."""
    return (
        facts.c.expired_at.is_(None),
        facts.c.standing == "believed",
        or_(facts.c.valid_until.is_(None), facts.c.valid_until > now),
    )


def expired_versions(connection: Connection, *, ended_before: datetime) -> list[ExpiredVersion]:
    """Believed versions (their open rows) that ended in valid time before `ended_before`."""
    statement = select(
        facts.c.fact_id, facts.c.slot_id, facts.c.valid_until, facts.c.recorded_at
    ).where(
        facts.c.expired_at.is_(None),
        facts.c.standing == "believed",
        facts.c.valid_until.is_not(None),
        facts.c.valid_until < ended_before,
    )
    return [ExpiredVersion(*row) for row in connection.execute(statement)]


def entity_activity(connection: Connection, *, now: datetime) -> list[EntityActivity]:
    """Every active entity (not merged away, not archived) with its facts active at `now`
    and when it was last seen, the entities merged into it counted as part of it."""
    rows = connection.execute(
        select(
            entities.c.entity_id,
            entities.c.last_seen,
            entities.c.merged_into,
            entities.c.archived_at,
        )
    ).all()
    into = {r.entity_id: r.merged_into for r in rows if r.merged_into is not None}
    root = merge_roots(into, (r.entity_id for r in rows))
    active_now = _active(now)
    ends = union_all(
        select(facts.c.subject_id.label("entity_id")).where(*active_now),
        select(facts.c.object_id.label("entity_id")).where(
            *active_now, facts.c.object_id.is_not(None)
        ),
    ).subquery()
    counts = select(ends.c.entity_id, func.count()).group_by(ends.c.entity_id)
    active: dict[UUID, int] = {}
    for entity, count in connection.execute(counts):
        owner = root.get(entity, entity)
        active[owner] = active.get(owner, 0) + count
    seen: dict[UUID, datetime] = {}
    for r in rows:
        owner = root[r.entity_id]
        seen[owner] = max(seen.get(owner, r.last_seen), r.last_seen)
    return [
        EntityActivity(r.entity_id, seen[r.entity_id], active.get(r.entity_id, 0))
        for r in rows
        if r.merged_into is None and r.archived_at is None
    ]


def active_facts_of(
    connection: Connection, ids: Sequence[UUID], *, now: datetime
) -> list[tuple[UUID, UUID]]:
    """(fact id, slot id) of the facts active at `now` with any of `ids` at either end."""
    found: dict[UUID, UUID] = {}
    for i in range(0, len(ids), _CHUNK):
        part = list(ids[i : i + _CHUNK])
        statement = select(facts.c.fact_id, facts.c.slot_id).where(
            or_(facts.c.subject_id.in_(part), facts.c.object_id.in_(part)), *_active(now)
        )
        found.update((r.fact_id, r.slot_id) for r in connection.execute(statement))
    return sorted(found.items())


def current_rows(connection: Connection, ids: Sequence[UUID]) -> dict[UUID, FactRow]:
    """The open row (the state believed now) of each of these fact versions."""
    keys: list[tuple[UUID, int]] = []
    for i in range(0, len(ids), _CHUNK):
        statement = select(facts.c.fact_id, facts.c.position).where(
            facts.c.fact_id.in_(list(ids[i : i + _CHUNK])), facts.c.expired_at.is_(None)
        )
        keys += [(r.fact_id, r.position) for r in connection.execute(statement)]
    return {r.fact_id: r for r in fact_states(connection, keys)}


def archived_counts(connection: Connection) -> tuple[int, int]:
    """(fact versions, entities) archived now."""
    versions = select(func.count()).where(
        facts.c.expired_at.is_(None), facts.c.standing == "archived"
    )
    gone = select(func.count()).where(entities.c.archived_at.is_not(None))
    return int(connection.execute(versions).scalar() or 0), int(
        connection.execute(gone).scalar() or 0
    )
