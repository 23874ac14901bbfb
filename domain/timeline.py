"""The assert decider: where a new assertion lands on its slot's valid-time timeline.

At any valid time T a slot holds at most one believed version. An assertion whose object
matches the version valid at its valid_from, and ends where that version ends, reinforces
it; a different object, or the same one said to end elsewhere (a bounded claim inside an
open version, an open claim inside a bounded one), closes that version at valid_from
(superseding it) unless the conflict strategy keeps the old one; an
assertion earlier than later versions becomes a closed, historical version that ends
where the next one starts.

A reinforcement that claims a later start than its version's is remembered as a restart:
the object was seen to hold from there. A different object asserted between the version's
start and a restart therefore ends at the restart, and the old object resumes there as a new
version (a continuation) with the restarts after it, so that at every valid time the slot
says what the assertion with the latest start at or before it said.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

import msgspec

from apexmem.domain.identities import fact_id
from apexmem.domain.state import FactVersion, SlotState
from apexmem.events.base import Event
from apexmem.events.fact import FactAsserted, FactReinforced, FactSuperseded, Outcome

__all__ = ["Decision", "Proposal", "Strategy", "decide_assert"]

Strategy = Literal["recency", "confidence"]


# gc=False here and on Decision: one per assertion, plain values (see events.base.Event).
class Proposal(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An assertion with every name resolved: what the decider needs besides the slot."""

    slot_id: UUID
    subject_id: UUID
    relation: str
    object_id: UUID | None
    value: str | None
    object_key: str
    edge_type: str
    fact: str
    confidence: float
    valid_from: datetime
    valid_until: datetime | None
    observed_at: datetime
    ref: str | None


class Decision(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The events of one assertion and what became of it."""

    events: list[Event]
    fact_id: UUID
    outcome: Outcome | Literal["reinforced"]
    supersedes: UUID | None = None
    after: int = 0
    """Events after the one that carries `fact_id` (the continuation a late version splits
    off a restarted one); usually none."""


def decide_assert(state: SlotState, proposal: Proposal, strategy: Strategy) -> Decision:
    """Decide the events that put `proposal` on the slot's timeline."""
    start = proposal.valid_from
    container, next_start = _around(state, start)
    same = container is not None and container.object_key == proposal.object_key
    end = _earlier(proposal.valid_until, next_start)
    if container is not None and same and end == container.valid_until:
        return _reinforce(container, proposal)
    if container is None:
        new_id = fact_id(proposal.slot_id, state.version + 1)
        outcome: Outcome = "created" if end is None else "historical"
        return Decision(
            events=[_asserted(proposal, new_id, end, outcome)], fact_id=new_id, outcome=outcome
        )
    if not same and strategy == "confidence" and proposal.confidence < container.confidence:
        new_id = fact_id(proposal.slot_id, state.version + 1)
        return Decision(
            events=[_asserted(proposal, new_id, end, "alternative")],
            fact_id=new_id,
            outcome="alternative",
        )
    new_id = fact_id(proposal.slot_id, state.version + 2)
    old_id = container.fact_id
    restarts = [t for t in container.restarts if t > start and _before_end(t, container)]
    if restarts:
        end = min(end, restarts[0]) if end is not None else restarts[0]
    close = FactSuperseded(fact_id=old_id, superseded_by=new_id, valid_until=start)
    outcome = "superseded" if end is None else "historical"
    asserted = _asserted(proposal, new_id, end, outcome, supersedes=old_id)
    events: list[Event] = [close, asserted]
    continued = _continuation(container, proposal, state.version + 3, restarts) if restarts else []
    return Decision(
        events=[*events, *continued],
        fact_id=new_id,
        outcome=outcome,
        supersedes=old_id,
        after=len(continued),
    )


def _earlier(a: datetime | None, b: datetime | None) -> datetime | None:
    """The earlier of two ends, None standing for no end."""
    if a is None:
        return b
    return a if b is None or a <= b else b


def _before_end(when: datetime, version: FactVersion) -> bool:
    return version.valid_until is None or when < version.valid_until


def _continuation(
    container: FactVersion, proposal: Proposal, number: int, restarts: list[datetime]
) -> list[Event]:
    """The container's object again from its first restart after the new version to its old
    end, with the restarts after that one: the events numbered `number` on."""
    resumed = fact_id(proposal.slot_id, number)
    outcome: Outcome = "created" if container.valid_until is None else "historical"
    again = FactAsserted(
        fact_id=resumed,
        subject_id=proposal.subject_id,
        relation=proposal.relation,
        object_id=container.object_id,
        value=container.value,
        edge_type=proposal.edge_type,
        fact=container.fact,
        confidence=container.confidence,
        valid_from=restarts[0],
        valid_until=container.valid_until,
        observed_at=container.observed_at,
        outcome=outcome,
    )
    later = [
        FactReinforced(
            fact_id=resumed,
            confidence=container.confidence,
            observed_at=container.observed_at,
            valid_from=when,
        )
        for when in restarts[1:]
    ]
    return [again, *later]


def _around(state: SlotState, start: datetime) -> tuple[FactVersion | None, datetime | None]:
    """The believed version valid at `start`, and the earliest believed start after it."""
    container = None
    next_start = None
    for v in state.versions:
        if v.standing != "believed":
            continue
        if v.valid_from > start:
            if next_start is None or v.valid_from < next_start:
                next_start = v.valid_from
        elif container is None and (v.valid_until is None or start < v.valid_until):
            container = v
    return container, next_start


def _reinforce(version: FactVersion, proposal: Proposal) -> Decision:
    later = proposal.valid_from > version.valid_from
    reinforced = version.fact_id
    event = FactReinforced(
        fact_id=reinforced,
        confidence=max(version.confidence, proposal.confidence),
        observed_at=max(version.observed_at, proposal.observed_at),
        ref=proposal.ref,
        valid_from=proposal.valid_from if later else None,
        fact=proposal.fact if proposal.fact != version.fact else None,
    )
    return Decision(events=[event], fact_id=reinforced, outcome="reinforced")


def _asserted(
    proposal: Proposal,
    new_id: UUID,
    end: datetime | None,
    outcome: Outcome,
    supersedes: UUID | None = None,
) -> FactAsserted:
    return FactAsserted(
        fact_id=new_id,
        subject_id=proposal.subject_id,
        relation=proposal.relation,
        object_id=proposal.object_id,
        value=proposal.value,
        edge_type=proposal.edge_type,
        fact=proposal.fact,
        confidence=proposal.confidence,
        valid_from=proposal.valid_from,
        valid_until=end,
        observed_at=proposal.observed_at,
        supersedes=supersedes,
        outcome=outcome,
        ref=proposal.ref,
    )
