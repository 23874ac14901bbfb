"""Belief revision on the write path (`[memory.graph.belief_revision] enabled`).

When an assertion adds a new current version joining a subject to an object entity, the
facts believed between the same two entities that still hold when it starts (open-ended,
or ending later), with the same edge type, in other slots, are its candidates. They come
from the graph read model up to its tracked position, from the log after it (the read
model may lag) and from the batch. A candidate whose relation is of the same domain and
whose sentence is similar enough is closed where the new fact starts, its verdict recorded
first (see `domain.revision`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Final, NamedTuple
from uuid import UUID

from apexmem.domain.revision import decide_late, decide_revision, same_domain
from apexmem.domain.state import FactVersion, SlotState
from apexmem.domain.timeline import Decision, Proposal
from apexmem.events.base import Event
from apexmem.events.entity import EntityObserved
from apexmem.events.envelope import NewEvent, RecordedEvent
from apexmem.events.fact import FactAsserted
from apexmem.readmodels.between import believed_between
from apexmem.readmodels.tables import GRAPH
from apexmem.service.logs import get_logger
from apexmem.service.resolution import SimilarWrites
from apexmem.service.staging import Meta, Staging
from apexmem.service.unseen import Unseen

__all__ = ["Revision", "revise"]

_logger = get_logger()
_ASSERTED: Final = ("fact-asserted.v1",)
_NEW_BELIEFS: Final = frozenset({"created", "superseded"})


class Revision(NamedTuple):
    """What belief revision did for one assertion, and what it asks of the assertion."""

    closed: int
    """Earlier beliefs closed where the new fact starts."""
    ends: datetime | None
    """Where the new fact must end: the start of the first later belief it contradicts."""
    verdicts: list[Event]
    """The new fact's contradictions by those later beliefs, to stage after it."""


def revise(
    similar: SimilarWrites,
    staging: Staging,
    proposal: Proposal,
    decision: Decision,
    meta: Meta,
) -> Revision:
    """Close the facts the new one contradicts (before it is staged), and find where the new
    one must end when it contradicts a belief that starts after it."""
    unchanged = Revision(closed=0, ends=None, verdicts=[])
    if proposal.object_id is None or decision.outcome not in _NEW_BELIEFS:
        return unchanged
    candidates = [
        (slot, version)
        for slot, fact_id, relation in _between(similar, staging, proposal)
        if slot != proposal.slot_id and same_domain(relation, proposal.relation)
        if (version := _believed_version(staging, slot, fact_id, proposal.valid_from)) is not None
    ]
    if not candidates:
        return unchanged
    try:
        vectors = similar.embed([proposal.fact, *(v.fact for _, v in candidates)])
    except Exception as e:  # a model's failure skips the revision, as the reference does
        _logger.warning("revision.skipped", fact=proposal.fact, error=repr(e))
        return unchanged
    scores = vectors[1:] @ vectors[0]
    closed, ends = 0, None
    verdicts: list[Event] = []
    for (slot, version), score in zip(candidates, scores, strict=True):
        if float(score) < similar.contradiction:
            continue
        starts, model, found = proposal.valid_from, similar.model, float(score)
        events = decide_revision(
            version, by=decision.fact_id, starts=starts, score=found, model=model
        )
        if events:
            staging.emit("slot", slot, events, meta)
            closed += 1
            continue
        if version.valid_until is not None:
            continue  # a late fact is cut only by a later belief still open, as before
        late = decide_late(version, fact=decision.fact_id, starts=starts, score=found, model=model)
        if late is not None:  # the new fact starts before this belief: it ends there
            ends = late[0] if ends is None else min(ends, late[0])
            verdicts.append(late[1])
    return Revision(closed=closed, ends=ends, verdicts=verdicts)


def _between(
    similar: SimilarWrites, staging: Staging, proposal: Proposal
) -> Iterable[tuple[UUID, UUID, str]]:
    """(slot, fact id, relation) of facts asserted between the two entities, deduplicated."""
    assert proposal.object_id is not None
    pairs = _batch_pairs(similar, staging)
    found: dict[int, tuple[UUID, UUID, str]] = {}
    subject, target = proposal.subject_id.int, proposal.object_id.int
    if subject not in pairs.created and target not in pairs.created:  # else none is older
        with similar.store.read() as connection:
            rows = believed_between(
                connection,
                proposal.subject_id,
                proposal.object_id,
                edge_type=proposal.edge_type,
                at=proposal.valid_from,
            )
        for row in rows:
            found[row.fact_id.int] = (row.slot_id, row.fact_id, row.relation)
    for slot, data in pairs.found.get((subject, target), []):
        if data.edge_type == proposal.edge_type:
            found[data.fact_id.int] = (slot, data.fact_id, data.relation)
    return found.values()


class _Pairs:
    """Facts by (subject, object) the read model may not hold: those past its position when
    the batch started, and those the batch asserted so far; and the batch's new entities."""

    def __init__(self) -> None:
        self.found: dict[tuple[int, int], list[tuple[UUID, FactAsserted]]] = {}
        self.created: set[int] = set()

    def add(self, events: Iterable[RecordedEvent | NewEvent]) -> None:
        for event in events:
            data = event.data
            if isinstance(data, FactAsserted) and data.object_id is not None:
                key = (data.subject_id.int, data.object_id.int)
                self.found.setdefault(key, []).append((event.stream_id, data))
            elif isinstance(data, EntityObserved) and event.version == 1:
                self.created.add(data.entity_id.int)


_UNSEEN: Final = Unseen(GRAPH, tags=_ASSERTED, new=_Pairs, fold=_Pairs.add)


def _batch_pairs(similar: SimilarWrites, staging: Staging) -> _Pairs:
    return _UNSEEN.of(staging, similar.log, similar.store)


def _believed_version(
    staging: Staging, slot: UUID, fact_id: UUID, starts: datetime
) -> FactVersion | None:
    """The version as the log (and this batch) has it now, when believed and still holding
    at `starts` or later (open-ended, or ending after it)."""
    state: SlotState = staging.state("slot", slot)
    version = state.find(fact_id)
    if version is None or version.standing != "believed":
        return None
    if version.valid_until is not None and version.valid_until <= starts:
        return None
    return version
