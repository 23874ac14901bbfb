"""A whole-log fold into entities and fact versions: the naive replay read models must match."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

import msgspec

from apexmem.domain.merges import followed
from apexmem.events.entity import EntityArchived, EntityMerged, EntityObserved
from apexmem.events.envelope import RecordedEvent
from apexmem.events.fact import (
    FactArchived,
    FactAsserted,
    FactReinforced,
    FactRetracted,
    FactSuperseded,
)
from apexmem.events.ports import Log

__all__ = ["FactView", "Snapshot", "snapshot"]

_TAGS = (
    "entity-observed.v1",
    "entity-merged.v1",
    "entity-archived.v1",
    "fact-asserted.v1",
    "fact-reinforced.v1",
    "fact-superseded.v1",
    "fact-retracted.v1",
    "fact-archived.v1",
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
    standing: Literal["believed", "alternative", "withdrawn", "archived"]
    """Archived: evicted, until the fact is observed again (a reinforcement brings it back)."""
    supersedes: UUID | None
    superseded_by: UUID | None
    position: int

    @property
    def current(self) -> bool:
        """Believed and open-ended in valid time: its slot's open version."""
        return self.standing == "believed" and self.valid_until is None

    def holds_at(self, when: datetime) -> bool:
        """Believed and valid at `when` (open-ended, or ending after it)."""
        return (
            self.standing == "believed"
            and self.valid_from <= when
            and (self.valid_until is None or when < self.valid_until)
        )


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    """Entity names and every fact version, folded from the log up to `position`."""

    position: int
    names: dict[UUID, str]
    """The name of every entity not archived (evicted and not observed since)."""
    facts: list[FactView]

    def current(self, at: datetime | None = None) -> list[FactView]:
        """The versions believed and valid at `at` (a fact true until 2030 is current
        today); open-ended ones when None."""
        if at is None:
            return [f for f in self.facts if f.current]
        return [f for f in self.facts if f.holds_at(at)]


class _Folded:
    """What the fold has gathered so far."""

    def __init__(self) -> None:
        self.names: dict[UUID, str] = {}
        """Every entity's first name, archived ones included: their facts keep naming them."""
        self.merged: dict[UUID, UUID] = {}
        self.archived: set[UUID] = set()
        self.facts: dict[UUID, FactView] = {}


def snapshot(log: Log, *, until: int | None = None) -> Snapshot:
    """Fold the log (up to position `until`) into names and fact versions."""
    folded = _Folded()
    last = 0
    for event in log.read(stop=until, tags=_TAGS):
        last = event.position
        if event.tag.startswith("entity-"):
            _apply_entity(event.data, folded)
        else:
            _apply_fact(event, folded)
    views = [_named(f, folded.names, folded.merged) for f in folded.facts.values()]
    shown = {e: name for e, name in folded.names.items() if e not in folded.archived}
    return Snapshot(position=last, names=shown, facts=views)


def _apply_entity(data: object, folded: _Folded) -> None:
    if isinstance(data, EntityObserved):
        folded.names.setdefault(data.entity_id, data.name)
        folded.archived.discard(data.entity_id)  # observed again: an archived entity is back
    elif isinstance(data, EntityMerged):
        folded.merged[data.entity_id] = data.into
    elif isinstance(data, EntityArchived):
        folded.archived.add(data.entity_id)


def _apply_fact(event: RecordedEvent, folded: _Folded) -> None:
    data, facts = event.data, folded.facts
    replace = msgspec.structs.replace
    if isinstance(data, FactAsserted):
        facts[data.fact_id] = _asserted(event, data)
        # A fact about an archived entity is an observation of it: it is back.
        folded.archived.difference_update((data.subject_id, data.object_id))
    elif isinstance(data, FactReinforced):
        old = facts[data.fact_id]
        if old.standing == "archived":  # observed again: the version and its ends are back
            folded.archived.difference_update((old.subject_id, old.object_id))
        standing = "believed" if old.standing == "archived" else old.standing
        sentence = old.fact if data.fact is None else data.fact
        facts[data.fact_id] = replace(
            old, confidence=data.confidence, standing=standing, fact=sentence
        )
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
    elif isinstance(data, FactArchived):
        facts[data.fact_id] = replace(facts[data.fact_id], standing="archived")


def _asserted(event: RecordedEvent, data: FactAsserted) -> FactView:
    return FactView(
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


def _named(fact: FactView, names: dict[UUID, str], merged: dict[UUID, UUID]) -> FactView:
    def name(entity: UUID) -> str:
        entity = followed(entity, merged.get)
        return names.get(entity, str(entity))

    target = name(fact.object_id) if fact.object_id is not None else fact.object
    return msgspec.structs.replace(fact, subject=name(fact.subject_id), object=target)
