"""Decay passes: the facts that crossed the recall threshold, recorded as one event per pass,
shown by history and diff; query-time decay is unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from uuid import UUID

import pytest
from clocks import Clock

from apexmem import Memory, parse_settings
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events.errors import ConcurrencyError, ValidationError
from apexmem.events.fading import FactsFaded


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def memory(tmp_path: Path, clock: Clock) -> Iterator[Memory]:
    with Memory.open(tmp_path / "mem", clock=clock, embedder=HashingEmbedder()) as mem:
        yield mem


def likes(memory: Memory, thing: str, confidence: float, edge_type: str = "semantic") -> UUID:
    return memory.assert_fact(
        subject="Alice", relation="likes", object=thing, confidence=confidence, edge_type=edge_type
    ).fact_id


def passes(memory: Memory) -> list[FactsFaded]:
    found = [e.data for e in memory.events(tags=["facts-faded.v1"])]
    assert all(isinstance(d, FactsFaded) for d in found)
    return found


def test_a_fact_that_decays_under_the_threshold_is_named_once_with_its_rate(
    memory: Memory, clock: Clock
) -> None:
    tea = likes(memory, "tea", 0.5)
    likes(memory, "coffee", 1.0)
    clock.days(200)  # 0.5 * exp(-2) = 0.068 < 0.1; 1.0 * exp(-2) = 0.135 stays

    done = memory.record_fades()
    again = memory.record_fades()

    [recorded] = passes(memory)
    assert [f.fact_id for f in recorded.faded] == [tea]
    assert recorded.faded[0].rate == 0.01
    assert recorded.faded[0].reason == "decayed"
    assert recorded.faded[0].confidence == pytest.approx(0.5 * 2.718281828459045**-2)
    assert recorded.at == clock.now and recorded.previous is None and recorded.threshold == 0.1
    assert done.position > 0 and [f.fact for f in done.faded] == ["Alice likes tea"]
    assert again.position == 0 and not again.faded


def test_a_pass_with_nothing_to_record_writes_nothing(memory: Memory, clock: Clock) -> None:
    likes(memory, "tea", 1.0)
    before = memory.log.last_position()
    clock.days(10)

    done = memory.record_fades()

    assert done.position == 0 and not done.faded and not done.restored
    assert memory.log.last_position() == before


def test_a_reinforcement_lifts_a_faded_fact_back_and_the_next_pass_records_it(
    memory: Memory, clock: Clock
) -> None:
    tea = likes(memory, "tea", 0.5)
    clock.days(200)
    memory.record_fades()
    clock.days(1)
    likes(memory, "tea", 0.5)  # observed again: decay restarts

    done = memory.record_fades()

    first, second = passes(memory)
    assert [(f.fact_id, f.reason) for f in second.restored] == [(tea, "reinforced")]
    assert second.previous == first.at and not second.faded
    assert [f.fact_id for f in done.restored] == [tea]


def test_a_lower_rate_lifts_a_faded_fact_back_as_a_rate_change(
    memory: Memory, clock: Clock
) -> None:
    when = likes(memory, "mornings", 0.5, edge_type="temporal")
    clock.days(200)
    memory.record_fades()
    memory.set_decay_rate("temporal", 0.001)

    memory.record_fades()

    restored = passes(memory)[-1].restored
    assert [(f.fact_id, f.reason, f.rate) for f in restored] == [(when, "rate changed", 0.001)]


def test_the_faded_facts_recorded_are_those_recall_leaves_out(memory: Memory, clock: Clock) -> None:
    for thing, confidence in (("tea", 0.5), ("coffee", 1.0), ("juice", 0.2)):
        likes(memory, thing, confidence)
    clock.days(120)

    memory.record_fades()

    shown = {f.fact_id for f in memory.facts_about("Alice")}
    every = {f.fact_id for f in memory.facts_about("Alice", include_faded=True)}
    assert {f.fact_id for f in passes(memory)[0].faded} == every - shown


def test_a_withdrawn_version_is_not_named_but_a_closed_one_still_believed_is(
    memory: Memory, clock: Clock
) -> None:
    old = memory.assert_fact(subject="Alice", relation="lives_in", object="Paris", confidence=0.5)
    clock.days(1)
    memory.assert_fact(subject="Alice", relation="lives_in", object="Rome", confidence=1.0)
    gone = likes(memory, "tea", 0.5)
    memory.retract(gone, reason="never said")
    clock.days(200)

    memory.record_fades()

    # Paris is still believed for the time it held: recall of that time leaves it out now.
    assert [f.fact_id for p in passes(memory) for f in p.faded] == [old.fact_id]


def test_history_of_a_fact_shows_when_it_faded_and_why(memory: Memory, clock: Clock) -> None:
    tea = likes(memory, "tea", 0.5)
    likes(memory, "coffee", 0.5, edge_type="temporal")
    clock.days(200)
    memory.record_fades()

    history = memory.history(fact=tea)
    of_entity = memory.history(entity="tea")

    fade = history[-1]
    assert fade.tag == "facts-faded.v1"
    assert [(f.fact_id, f.reason, f.rate) for f in fade.data.faded] == [(tea, "decayed", 0.01)]
    assert fade.data.at == clock.now
    assert fade in of_entity
    assert [e.position for e in history] == sorted(e.position for e in history)


def test_diff_between_two_moments_lists_the_fades(memory: Memory, clock: Clock) -> None:
    tea = likes(memory, "tea", 0.5)
    clock.days(200)
    start = clock.now
    clock.days(1)
    memory.record_fades()
    clock.days(1)
    likes(memory, "tea", 0.5)
    memory.record_fades()

    changes = memory.diff(start, clock.now + timedelta(seconds=1))

    assert [(c.kind, c.fact_id, c.fact) for c in changes.faded] == [
        ("faded", tea, "Alice likes tea")
    ]
    assert [c.fact_id for c in changes.restored] == [tea]
    assert changes.faded[0].detail.startswith("decayed at 0.01/day")
    assert not changes.asserted  # the reinforcement is not a new version


def test_a_pass_measured_before_the_previous_one_is_refused(memory: Memory, clock: Clock) -> None:
    likes(memory, "tea", 0.5)
    clock.days(200)
    memory.record_fades()
    clock.days(-1)
    before = memory.log.last_position()

    with pytest.raises(ValidationError, match="clock"):
        memory.record_fades()

    assert memory.log.last_position() == before


def test_a_copy_replayed_from_the_log_shows_the_same_fades_at_any_clock(
    memory: Memory, clock: Clock, tmp_path: Path
) -> None:
    tea = likes(memory, "tea", 0.5)
    clock.days(200)
    memory.record_fades()

    with memory.replay(until=memory.log.last_position(), into=tmp_path / "copy") as copy:
        faded = [e for e in copy.history(fact=tea) if e.tag == "facts-faded.v1"]

    assert [e.data for e in faded] == passes(memory)


@pytest.fixture
def behind(tmp_path: Path, clock: Clock) -> Iterator[Memory]:
    """A memory whose read models move only when told (a follower's, lagging)."""
    settings, _ = parse_settings("[memory.projection]\ninline = false\n")
    with Memory.open(
        tmp_path / "behind", settings=settings, clock=clock, embedder=HashingEmbedder()
    ) as mem:
        yield mem


def test_facts_asserted_after_what_the_read_models_show_do_not_hold_a_pass_up(
    behind: Memory, clock: Clock
) -> None:
    tea = likes(behind, "tea", 0.5)
    behind.projections.catch_up()
    clock.days(200)
    likes(behind, "coffee", 0.5)  # not projected yet: the next pass sees it

    done = behind.record_fades()

    assert [f.fact_id for f in done.faded] == [tea] and done.position > 0


def test_a_pass_never_records_a_fade_a_later_reinforcement_already_undid(
    behind: Memory, clock: Clock
) -> None:
    likes(behind, "tea", 0.5)
    behind.projections.catch_up()
    clock.days(200)
    likes(behind, "tea", 0.5)  # observed again, the read models not told yet
    before = behind.log.last_position()

    with pytest.raises(ConcurrencyError):
        behind.record_fades()
    behind.projections.catch_up()
    done = behind.record_fades()

    assert behind.log.last_position() == before
    assert done.position == 0 and not done.faded
