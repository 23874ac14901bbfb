"""Eviction on a Memory: archive expired versions, orphan entities and entities past the cap,
as events (see domain.eviction). Nothing is deleted: the log, `history` and the views of
moments before an archive keep everything, and a rebuild archives the same again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from uuid import UUID

import msgspec
from sqlalchemy import Connection

from apexmem.domain.eviction import (
    CAPPED,
    EXPIRED,
    ORPHAN,
    EvictionPlan,
    FactChoice,
    plan_eviction,
)
from apexmem.domain.settings import Settings
from apexmem.events.entity import EntityArchived
from apexmem.events.envelope import NewEvent, RecordedEvent
from apexmem.events.fact import FactArchived
from apexmem.events.ports import LockedLog, Log
from apexmem.readmodels import ReadModels, entity_groups, names_of, tracked_position
from apexmem.readmodels.eviction import (
    active_facts_of,
    current_rows,
    entity_activity,
    expired_versions,
)
from apexmem.readmodels.tables import GRAPH
from apexmem.service.logs import get_logger
from apexmem.service.pipeline import Pipeline, Versions
from apexmem.service.upkeep import recorded

__all__ = ["EvictedEntity", "EvictedFact", "Eviction", "EvictionReport"]

_logger = get_logger()


class EvictedFact(msgspec.Struct, frozen=True, kw_only=True):
    """A fact version an eviction archived (or would archive)."""

    fact_id: UUID
    fact: str
    reason: str


class EvictedEntity(msgspec.Struct, frozen=True, kw_only=True):
    """An entity an eviction archived (or would archive)."""

    entity_id: UUID
    name: str
    entity_type: str
    reason: str


class EvictionReport(msgspec.Struct, frozen=True, kw_only=True):
    """What one eviction archived, or with `dry_run` would archive, and why."""

    dry_run: bool
    expired: int
    """Fact versions that ended more than the retention ago."""
    orphans: int
    """Entities with no active fact, not seen for the retention."""
    capped: int
    """Entities past `max_entities`, and their active facts."""
    facts: list[EvictedFact]
    entities: list[EvictedEntity]
    position: int
    """The read models' log position the eviction looked at."""


class _Read(msgspec.Struct, frozen=True, kw_only=True):
    plan: EvictionPlan
    report: EvictionReport
    versions: dict[UUID, int]


class Eviction:
    """Archives what the seeds' eviction removes, as events."""

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        log: Log,
        store: ReadModels,
        settings: Settings,
        clock: Callable[[], datetime],
        ready: Callable[[], None],
    ) -> None:
        self._pipeline = pipeline
        self._log = log
        self._store = store
        self._settings = settings
        self._clock = clock
        self._ready = ready

    def evict(self, *, dry_run: bool = False, actor: str | None = None) -> EvictionReport:
        """Archive what the seeds' eviction removes, as events; `dry_run` only lists it.

        `[memory.graph] expired_edge_retention_days` (90) and `max_entities` (0: no cap)
        decide (see domain.eviction). Archived versions and entities leave the current read
        models; the log and `history` keep them, and views of earlier moments still show
        them. A later observation brings an archived entity or version back.
        """
        graph = self._settings.memory.graph
        now = self._clock()

        def read(connection: Connection) -> _Read:
            return _read(
                self._log.read_streams,
                connection,
                now=now,
                retention_days=graph.expired_edge_retention_days,
                max_entities=graph.max_entities,
                dry_run=dry_run,
            )

        if dry_run:
            self._ready()
            with self._store.read() as connection:
                return read(connection).report
        self._pipeline.refuse_if_read_only()

        def decide(seen: _Read) -> tuple[list[NewEvent], EvictionReport]:
            return _events(seen, actor), seen.report

        done = recorded(
            self._pipeline,
            "evict",
            ready=self._ready,
            store=self._store,
            read=read,
            decide=decide,
            outdated=_outdated,
        )
        _logger.info(
            "graph.evicted",
            expired=done.expired,
            orphans=done.orphans,
            capped=done.capped,
            position=done.position,
        )
        return done


def _read(
    read_streams: Callable[[Sequence[UUID]], dict[UUID, list[RecordedEvent]]],
    connection: Connection,
    *,
    now: datetime,
    retention_days: int,
    max_entities: int,
    dry_run: bool,
) -> _Read:
    """Plan on one snapshot of the read models and name what goes."""
    cutoff = now - timedelta(days=retention_days)
    plan, capped = plan_eviction(
        now=now,
        retention_days=retention_days,
        max_entities=max_entities,
        expired=expired_versions(connection, ended_before=cutoff),
        activity=entity_activity(connection, now=now),
    )
    if capped:
        members = [m for group in entity_groups(connection, capped).values() for m in group]
        reason = f"{CAPPED}: an end of it was archived ({max_entities})"
        chosen = {f.fact_id for f in plan.facts}
        extra = [
            FactChoice(fact, slot, reason)
            for fact, slot in active_facts_of(connection, members, now=now)
            if fact not in chosen
        ]
        plan = msgspec.structs.replace(plan, facts=[*plan.facts, *extra])
    position = tracked_position(connection, GRAPH)
    streams = [*(f.slot_id for f in plan.facts), *(e for e, _ in plan.entities)]
    return _Read(
        plan=plan,
        report=_report(connection, plan, dry_run=dry_run, position=position),
        versions={} if dry_run else _versions(read_streams(streams), position),
    )


def _outdated(log: LockedLog, seen: _Read) -> bool:
    """Whether an event after the snapshot names an entity the plan archives: a fact about
    it makes it active (not an orphan, or one to archive with it under the cap). Its own
    stream's versions cover an observation; a fact goes to its slot's stream."""
    entities = {e for e, _ in seen.plan.entities}
    if not entities:
        return False
    for event in log.read_after(seen.report.position):
        data = event.data
        named = (getattr(data, "subject_id", None), getattr(data, "object_id", None))
        if entities.intersection(named):
            return True
    return False


def _versions(found: dict[UUID, list[RecordedEvent]], position: int) -> dict[UUID, int]:
    """Each stream's version as the read models saw it (a later event makes the append
    conflict, and the eviction is planned again)."""
    return {
        stream: max((e.version for e in events if e.position <= position), default=0)
        for stream, events in found.items()
    }


def _report(
    connection: Connection, plan: EvictionPlan, *, dry_run: bool, position: int
) -> EvictionReport:
    rows = current_rows(connection, [f.fact_id for f in plan.facts])
    names = names_of(connection, [e for e, _ in plan.entities])
    return EvictionReport(
        dry_run=dry_run,
        expired=plan.count(EXPIRED),
        orphans=plan.count(ORPHAN),
        capped=plan.count(CAPPED),
        facts=[
            EvictedFact(fact_id=f.fact_id, fact=rows[f.fact_id].fact, reason=f.reason)
            for f in plan.facts
            if f.fact_id in rows
        ],
        entities=[
            EvictedEntity(entity_id=e, name=names[e][0], entity_type=names[e][1], reason=reason)
            for e, reason in plan.entities
            if e in names
        ],
        position=position,
    )


def _events(seen: _Read, actor: str | None) -> list[NewEvent]:
    """One archive event per version and entity, at the next version of its stream."""
    numbered = Versions(seen.versions, actor=actor)
    events = [
        numbered.event(f.slot_id, FactArchived(fact_id=f.fact_id, reason=f.reason))
        for f in seen.plan.facts
    ]
    events.extend(
        numbered.event(entity, EntityArchived(entity_id=entity, reason=reason))
        for entity, reason in seen.plan.entities
    )
    return events
