"""A merge moves the source's current facts into the target's slots.

Merging S into T sends S's names to T, so new facts about either name land in T's slots.
S's own slots would keep their versions: a single-valued relation could then hold two
values for T at one time (one in each slot, and a new fact would close only T's), and a
fact between S and T would read as one about T and itself. So in the merge's own append,
for every believed version in a slot with S as subject or object, earliest start first:

- it is withdrawn from that slot (`fact-retracted.v1` with no end, the reason naming the
  merge), and
- asserted again with T in S's place, with its own start and end, on the target slot's
  timeline like any assertion (created, reinforced, superseding, or historical);
- a fact between S and T is withdrawn only.

A single-valued slot of a third entity whose current object is S stays: its slot does not
depend on the object, and the read models show the object as T. Withdrawn and alternative
versions stay where they are. The slots come from the graph read model up to its position,
then the log after it and the batch (the read model may lag behind the log).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final
from uuid import UUID

from apexmem.domain.identities import object_key, slot_id
from apexmem.domain.ontology import Ontology
from apexmem.domain.state import FactVersion, SlotState
from apexmem.domain.timeline import Proposal, Strategy, decide_assert
from apexmem.events.envelope import NewEvent, RecordedEvent
from apexmem.events.fact import FactAsserted, FactRetracted
from apexmem.events.ports import Log
from apexmem.readmodels import ReadModels
from apexmem.readmodels.tables import GRAPH
from apexmem.readmodels.touching import SlotKey, slots_touching
from apexmem.replay.projections import unprojected
from apexmem.service.staging import Meta, Staging

__all__ = ["MOVED", "Moves"]

MOVED: Final = "moved by a merge: its entity was merged into another, whose slot now holds it"
_ASSERTED: Final = ("fact-asserted.v1",)


class Moves:
    """Moves a merged entity's current facts; reads where they are from the graph read
    model, then the log after its position."""

    def __init__(self, log: Log, store: ReadModels) -> None:
        self.log = log
        self.store = store

    def move(
        self,
        staging: Staging,
        ontology: Ontology,
        strategy: Strategy,
        meta: Meta,
        *,
        source: UUID,
        target: UUID,
    ) -> int:
        """Stage the moves of `source`'s believed facts to `target`; how many were withdrawn."""
        found = [
            (key, version)
            for key in self._slots(source, staging.events)
            for version in _believed(staging.state("slot", key.slot_id))
        ]
        found.sort(key=lambda pair: pair[1].valid_from)  # onto the target's timeline in order
        withdrawn = 0
        for key, version in found:
            subject = target if key.subject_id == source else key.subject_id
            other = target if version.object_id == source else version.object_id
            if subject == key.subject_id and other == version.object_id:
                continue  # a slot of a third entity whose object is not the source
            relation = ontology.resolve(key.relation)
            many = relation.cardinality == "many"
            at = object_key(other, version.value, version.fact) if many else None
            slot = slot_id(subject, relation.canonical, key.edge_type, at)
            if other != subject and slot == key.slot_id:
                continue  # single-valued, the source its object: the slot stays right
            retraction = FactRetracted(fact_id=version.fact_id, valid_until=None, reason=MOVED)
            staging.emit("slot", key.slot_id, [retraction], meta)
            withdrawn += 1
            if other == subject:
                continue  # a fact between the two merged entities: about nothing now
            proposal = _proposal(version, key, slot=slot, subject=subject, other=other)
            decision = decide_assert(staging.state("slot", slot), proposal, strategy)
            staging.emit("slot", slot, decision.events, meta)
        return withdrawn

    def _slots(self, entity: UUID, batch: Iterable[NewEvent]) -> list[SlotKey]:
        """Every slot with a fact about `entity`, as subject or object (log and batch too)."""
        with self.store.read() as connection:
            later: Iterable[RecordedEvent | NewEvent] = unprojected(
                self.log, connection, GRAPH, tags=_ASSERTED
            )
            found = {key.slot_id: key for key in slots_touching(connection, entity)}
        for event in [*later, *batch]:
            data = event.data
            if isinstance(data, FactAsserted) and entity in (data.subject_id, data.object_id):
                found.setdefault(event.stream_id, _key(event.stream_id, data))
        return list(found.values())


def _believed(state: SlotState) -> list[FactVersion]:
    return [v for v in state.versions if v.standing == "believed"]


def _proposal(
    version: FactVersion, key: SlotKey, *, slot: UUID, subject: UUID, other: UUID | None
) -> Proposal:
    """`version` asserted again in `slot`, about `subject` (and `other`)."""
    return Proposal(
        slot_id=slot,
        subject_id=subject,
        relation=key.relation,
        object_id=other,
        value=version.value,
        object_key=object_key(other, version.value, version.fact),
        edge_type=key.edge_type,
        fact=version.fact,
        confidence=version.confidence,
        valid_from=version.valid_from,
        valid_until=version.valid_until,
        observed_at=version.observed_at,
        ref=None,
    )


def _key(slot: UUID, data: FactAsserted) -> SlotKey:
    return SlotKey(
        slot_id=slot,
        subject_id=data.subject_id,
        relation=data.relation,
        edge_type=data.edge_type,
    )
