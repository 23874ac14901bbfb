"""A single-valued slot holds at most one believed version at any valid time T.

Random assertions (objects among a few, valid_from out of order, optional ends, random
confidence) and random retractions are run through the pure decider and through the facade;
afterwards every boundary and every midpoint between boundaries is checked. Through the
facade, the slot folded from the log also equals the state the writer evolved.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID, uuid4, uuid5

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from apexmem import Memory, ValidationError, parse_settings
from apexmem.domain.deciders import decide_retract
from apexmem.domain.identities import NS, object_key
from apexmem.domain.state import FactVersion, SlotState
from apexmem.domain.timeline import Proposal, Strategy, decide_assert
from apexmem.events import Event
from apexmem.projections.streams import evolve_slot, fold

BASE = datetime(2020, 1, 1, tzinfo=UTC)
OBJECTS = ("Acme", "Globex", "Initech")


@dataclass(frozen=True)
class Assertion:
    """Assert `works_at <target>` from day `start`, for `length` days when given."""

    target: str
    start: int
    length: int | None
    confidence: float


@dataclass(frozen=True)
class Retraction:
    """Retract the `pick`-th fact id seen so far; end it on day `end`, or withdraw it."""

    pick: int
    end: int | None


Step = Assertion | Retraction

CONFIDENCES = st.sampled_from([0.3, 0.5, 0.9]) | st.floats(min_value=0.0, max_value=1.0)
ASSERTIONS = st.builds(
    Assertion,
    target=st.sampled_from(OBJECTS),
    start=st.integers(min_value=0, max_value=30),
    length=st.none() | st.integers(min_value=1, max_value=12),
    confidence=CONFIDENCES,
)
RETRACTIONS = st.builds(
    Retraction,
    pick=st.integers(min_value=0, max_value=20),
    end=st.none() | st.integers(min_value=0, max_value=45),
)
STEPS = st.lists(st.one_of(ASSERTIONS, ASSERTIONS, RETRACTIONS), min_size=1, max_size=12)
STRATEGIES = st.sampled_from(["recency", "confidence"])


def day(n: int) -> datetime:
    """BASE plus `n` days."""
    return BASE + timedelta(days=n)


def instants(versions: Iterable[FactVersion]) -> list[datetime]:
    """Every boundary of the versions, the midpoints between them, and one before and after."""
    bounds = sorted(
        {v.valid_from for v in versions} | {v.valid_until for v in versions if v.valid_until}
    )
    if not bounds:
        return []
    middles = [a + (b - a) / 2 for a, b in itertools.pairwise(bounds)]
    return [bounds[0] - timedelta(days=1), *bounds, *middles, bounds[-1] + timedelta(days=1)]


def overlaps(state: SlotState) -> list[tuple[datetime, list[UUID]]]:
    """The instants at which more than one believed version is valid, with those versions."""
    found = []
    for when in instants(state.versions):
        valid = [v.fact_id for v in state.versions if v.valid_at(when)]
        if len(valid) > 1:
            found.append((when, valid))
    return found


def test_the_overlap_check_finds_two_believed_versions_valid_at_once() -> None:
    first = FactVersion(
        fact_key=uuid4().int,
        object_key="a",
        confidence=1.0,
        valid_from=day(0),
        valid_until=day(10),
        observed_at=day(0),
    )
    second = FactVersion(
        fact_key=uuid4().int,
        object_key="b",
        confidence=1.0,
        valid_from=day(9),
        valid_until=None,
        observed_at=day(0),
    )
    withdrawn = msgspec.structs.replace(second, standing="withdrawn")

    found = overlaps(SlotState(versions=(first, second)))
    none_found = overlaps(SlotState(versions=(first, withdrawn)))

    assert [when for when, _ in found] == [day(9), day(9) + timedelta(hours=12)]
    assert none_found == []


# Through the pure decider -------------------------------------------------------------------


def propose(slot: UUID, subject: UUID, step: Assertion) -> Proposal:
    """The proposal the facade would build for one assertion on the slot."""
    target = uuid5(NS, step.target)
    return Proposal(
        slot_id=slot,
        subject_id=subject,
        relation="works_at",
        object_id=target,
        value=None,
        object_key=object_key(target, None),
        edge_type="semantic",
        fact=f"Alice works_at {step.target}",
        confidence=step.confidence,
        valid_from=day(step.start),
        valid_until=day(step.start + step.length) if step.length else None,
        observed_at=day(100),
        ref=None,
    )


def run_decider(steps: Sequence[Step], strategy: Strategy) -> tuple[SlotState, list[Event]]:
    """Decide and fold every step on one slot; refused retractions change nothing."""
    slot, subject = uuid4(), uuid4()
    state, emitted, facts = SlotState(), list[Event](), list[UUID]()
    for step in steps:
        if isinstance(step, Assertion):
            decision = decide_assert(state, propose(slot, subject, step), strategy)
            events: list[Event] = decision.events
            facts.append(decision.fact_id)
        elif facts:
            end = day(step.end) if step.end is not None else None
            try:
                events = decide_retract(state, facts[step.pick % len(facts)], end, "test")
            except ValidationError:
                continue
        else:
            continue
        emitted.extend(events)
        state = fold(evolve_slot, state, events)
    return state, emitted


@given(steps=STEPS, strategy=STRATEGIES)
def test_the_decider_keeps_at_most_one_believed_version_valid_at_any_time(
    steps: list[Step], strategy: Strategy
) -> None:
    state, _ = run_decider(steps, strategy)

    found = overlaps(state)

    assert found == []


@given(steps=STEPS, strategy=STRATEGIES)
def test_the_decider_keeps_at_most_one_current_version(
    steps: list[Step], strategy: Strategy
) -> None:
    state, _ = run_decider(steps, strategy)

    current = [v for v in state.versions if v.standing == "believed" and v.valid_until is None]

    assert len(current) <= 1
    assert state.current() == (current[0] if current else None)


@given(steps=STEPS, strategy=STRATEGIES)
def test_every_assertion_gets_a_fresh_fact_id_and_versions_never_end_before_they_begin(
    steps: list[Step], strategy: Strategy
) -> None:
    state, emitted = run_decider(steps, strategy)

    ids = [v.fact_id for v in state.versions]

    assert len(ids) == len(set(ids))
    assert state.version == len(emitted)
    assert all(v.valid_until is None or v.valid_from <= v.valid_until for v in state.versions)


# Through the facade -------------------------------------------------------------------------


def ticking_clock() -> Callable[[], datetime]:
    """A deterministic clock after every valid time the steps use, one millisecond per read."""
    ticks = [datetime(2024, 1, 1, tzinfo=UTC)]

    def now() -> datetime:
        ticks.append(ticks[-1] + timedelta(milliseconds=1))
        return ticks[-1]

    return now


def apply(memory: Memory, steps: Sequence[Step]) -> UUID | None:
    """Run every step through the facade; returns the slot, if any assertion was made."""
    slot, facts = None, list[UUID]()
    for step in steps:
        if isinstance(step, Assertion):
            until = day(step.start + step.length) if step.length else None
            result = memory.assert_fact(
                subject="Alice",
                subject_type="person",
                relation="works_at",
                object=step.target,
                object_type="organization",
                confidence=step.confidence,
                valid_from=day(step.start),
                valid_until=until,
            )
            slot = result.slot_id
            facts.append(result.fact_id)
            # The result's position is the event that carries its fact (a split's too).
            [carried] = memory.log.read(start=result.position, stop=result.position)
            assert getattr(carried.data, "fact_id", None) == result.fact_id
        elif facts:
            position = memory.log.last_position()
            end = day(step.end) if step.end is not None else None
            try:
                memory.retract(facts[step.pick % len(facts)], valid_until=end)
            except ValidationError:
                assert memory.log.last_position() == position
    return slot


@given(steps=STEPS, strategy=STRATEGIES)
def test_through_the_facade_the_replayed_slot_equals_the_writers_and_never_overlaps(
    steps: list[Step], strategy: Strategy
) -> None:
    text = f'[memory.graph]\nconflict_strategy = "{strategy}"\n'
    settings = parse_settings(text)[0]
    with (
        tempfile.TemporaryDirectory() as directory,
        Memory.open(Path(directory), settings=settings, clock=ticking_clock()) as memory,
    ):
        slot = apply(memory, steps) or uuid4()

        replayed = fold(evolve_slot, SlotState(), (e.data for e in memory.log.read_stream(slot)))
        # The writer's cache is private; it is exactly "the state the writer evolved".
        evolved = memory._writer._cache.get(slot) or SlotState()
        assert replayed == evolved
        assert overlaps(replayed) == []
        views = {f.fact_id: f for f in memory.snapshot().facts}
        for version in replayed.versions:
            view = views[version.fact_id]
            assert (view.valid_from, view.valid_until) == (version.valid_from, version.valid_until)
            assert (view.standing, view.confidence) == (version.standing, version.confidence)
        assert len([f for f in views.values() if f.current]) <= 1


# Against the point model ----------------------------------------------------------------------

OPEN_ASSERTIONS = st.builds(
    Assertion,
    target=st.sampled_from(OBJECTS),
    start=st.integers(min_value=0, max_value=30),
    length=st.none(),
    confidence=st.just(0.9),
)


def said_at(steps: Sequence[Assertion], when: datetime) -> str | None:
    """The point model: the object of the assertion with the latest start at or before
    `when`, the later arrival on equal starts (the bench's ground truth says the same)."""
    best: tuple[int, int] | None = None
    target = None
    for arrival, step in enumerate(steps):
        if day(step.start) <= when and (best is None or (step.start, arrival) > best):
            best, target = (step.start, arrival), step.target
    return target


@given(steps=st.lists(OPEN_ASSERTIONS, min_size=1, max_size=12))
def test_at_every_valid_time_the_slot_says_what_the_latest_start_before_it_said(
    steps: list[Assertion],
) -> None:
    state, _ = run_decider(steps, "recency")
    keys = {object_key(uuid5(NS, name), None): name for name in OBJECTS}
    times = [day(s.start) + delta for s in steps for delta in (-timedelta(hours=1), timedelta())]

    said = {when: said_at(steps, when) for when in times}
    held = {
        when: next((keys[v.object_key] for v in state.versions if v.valid_at(when)), None)
        for when in times
    }

    assert held == said


def test_a_late_assertion_between_a_start_and_a_restart_ends_at_the_restart() -> None:
    # Paris from 2015, Paris again from 2017 (a reinforcement), then Rome from 2016: in 2018
    # the slot says Paris, as the bench's ground truth does (the bug the suite found).
    steps = [Assertion("Acme", 0, None, 0.9), Assertion("Acme", 20, None, 0.9)]
    steps.append(Assertion("Globex", 10, None, 0.9))

    state, emitted = run_decider(steps, "recency")
    current = state.current()

    assert current is not None and current.object_key == object_key(uuid5(NS, "Acme"), None)
    assert current.valid_from == day(20)
    assert [type(e).__name__ for e in emitted] == [
        "FactAsserted",
        "FactReinforced",
        "FactSuperseded",
        "FactAsserted",
        "FactAsserted",
    ]
    assert [(v.valid_from, v.valid_until) for v in state.versions] == [
        (day(0), day(10)),
        (day(10), day(20)),
        (day(20), None),
    ]
