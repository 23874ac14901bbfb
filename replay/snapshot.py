"""A whole-log fold into entities and fact versions: the naive replay read models must match."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

import msgspec

from apexmem.events.entity import EntityMerged, EntityObserved
from apexmem.events.fact import FactAsserted, FactReinforced, FactRetracted, FactSuperseded
from apexmem.events.log import EventLog, RecordedEvent

__all__ = ["FactView", "Snapshot", "snapshot"]

_TAGS = (
    "entity-observed.v1",
    "entity-merged.v1",
    "fact-asserted.v1",
    "fact-reinforced.v1",
    "fact-superseded.v1",
    "fact-retracted.v1",
)


class FactView(msgspec.Struct, frozen=True, kw_only=True):
    """One fact version as the log says it stands."""

    fact_id: UUID
    slot_id: UUID
    subject_id: UUID
    subject: str
    relation: str
    object_id: UUID | None
    object: str | None
    """The object entity's name, or the literal value, or None for a note."""
    edge_type: str
    fact: str
    confidence: float
    valid_from: datetime
    valid_until: datetime | None
    recorded_at: datetime
    standing: Literal["believed", "alternative", "withdrawn"]
    supersedes: UUID | None
    superseded_by: UUID | None
    position: int

    @property
    def current(self) -> bool:
        """Believed and open-ended in valid time."""
        return self.standing == "believed" and self.valid_until is None


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    """Entity names and every fact version, folded from the log up to `position`."""

    position: int
    names: dict[UUID, str]
    facts: list[FactView]

    def current(self) -> list[FactView]:
        """The versions that are believed now and open-ended."""
        return [f for f in self.facts if f.current]


def snapshot(log: EventLog, *, until: int | None = None) -> Snapshot:
    """Fold the log (up to position `until`) into names and fact versions."""
    names: dict[UUID, str] = {}
    merged: dict[UUID, UUID] = {}
    facts: dict[UUID, FactView] = {}
    last = 0
    for event in log.read(stop=until, tags=_TAGS):
        last = event.position
        _apply(event, names, merged, facts)
    views = [_named(f, names, merged) for f in facts.values()]
    return Snapshot(position=last, names=names, facts=views)


def _apply(
    event: RecordedEvent,
    names: dict[UUID, str],
    merged: dict[UUID, UUID],
    facts: dict[UUID, FactView],
) -> None:
    data = event.data
    replace = msgspec.structs.replace
    if isinstance(data, EntityObserved):
        names.setdefault(data.entity_id, data.name)
    elif isinstance(data, EntityMerged):
        merged[data.entity_id] = data.into
    elif isinstance(data, FactAsserted):
        facts[data.fact_id] = FactView(
            fact_id=data.fact_id,
            slot_id=event.stream_id,
            subject_id=data.subject_id,
            subject="",
            relation=data.relation,
            object_id=data.object_id,
            object=data.value,
            edge_type=data.edge_type,
            fact=data.fact,
            confidence=data.confidence,
            valid_from=data.valid_from,
            valid_until=data.valid_until,
            recorded_at=event.recorded_at,
            standing="alternative" if data.outcome == "alternative" else "believed",
            supersedes=data.supersedes,
            superseded_by=None,
            position=event.position,
        )
    elif isinstance(data, FactReinforced):
        facts[data.fact_id] = replace(facts[data.fact_id], confidence=data.confidence)
    elif isinstance(data, FactSuperseded):
        facts[data.fact_id] = replace(
            facts[data.fact_id], valid_until=data.valid_until, superseded_by=data.superseded_by
        )
    elif isinstance(data, FactRetracted):
        old = facts[data.fact_id]
        facts[data.fact_id] = (
            replace(old, standing="withdrawn")
            if data.valid_until is None
            else replace(old, valid_until=data.valid_until)
        )


def _named(fact: FactView, names: dict[UUID, str], merged: dict[UUID, UUID]) -> FactView:
    def name(entity: UUID) -> str:
        while entity in merged:
            entity = merged[entity]
        return names.get(entity, str(entity))

    target = name(fact.object_id) if fact.object_id is not None else fact.object
    return msgspec.structs.replace(fact, subject=name(fact.subject_id), object=target)
