"""A-MEM usage: retrieval counts from usage events, and decay passes recorded as events.

Cases from the reference (digest section 7, item 15) where they apply: counts are whole
numbers, a pass multiplies and truncates, counts of 0 and facts retrieved within the
interval are left alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from uuid import UUID

import pytest
from clocks import Clock

from apexmem import ApexmemError, Memory, parse_settings
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events import RetrievalCountsDecayed
from apexmem.events.envelope import NewEvent
from apexmem.events.policy import FactsRetrieved
from apexmem.readmodels import dump


@pytest.fixture
def clock() -> Clock:
    return Clock()


def open_memory(path: Path, clock: Clock, toml: str = "") -> Memory:
    settings, _ = parse_settings(toml)
    return Memory.open(path, settings=settings, clock=clock, embedder=HashingEmbedder())


@pytest.fixture
def halving(tmp_path: Path, clock: Clock) -> Iterator[Memory]:
    """λ 0.5 once a minute, so counts and intervals are easy to follow."""
    toml = (
        "[memory.graph.note_linking]\n"
        "link_weight_decay_lambda = 0.5\n"
        "link_weight_decay_interval_secs = 60\n"
    )
    with open_memory(tmp_path / "mem", clock, toml) as mem:
        yield mem


def knows(memory: Memory, a: str, b: str) -> UUID:
    return memory.assert_fact(subject=a, relation="knows", object=b).fact_id


def retrieve(memory: Memory, *facts: UUID, times: int = 1) -> None:
    """Usage events as recalls append them (each a stream of its own)."""
    memory.log.append(
        [
            NewEvent(stream_id=uuid.uuid4(), version=1, data=FactsRetrieved(fact_ids=list(facts)))
            for _ in range(times)
        ]
    )


def test_each_retrieval_counts_one_from_zero(memory: Memory) -> None:
    fact = knows(memory, "Alice", "Bob")
    never = memory.retrieval_counts([fact])

    retrieve(memory, fact)
    once = memory.retrieval_counts([fact])
    retrieve(memory, fact)

    assert never == {}
    assert once == {fact: 1.0}
    assert memory.retrieval_counts([str(fact)]) == {fact: 2.0}


def test_a_recall_counts_the_facts_it_returned(memory: Memory) -> None:
    fact = knows(memory, "Alice", "Bob")

    found = memory.recall("Alice")

    assert fact in {h.item_id for h in found if h.kind == "fact"}
    assert memory.retrieval_counts([fact]) == {fact: 1.0}


def test_a_pass_halves_a_count_of_ten_and_says_so(halving: Memory, clock: Clock) -> None:
    fact = knows(halving, "Alice", "Bob")
    retrieve(halving, fact, times=10)
    clock.advance(61)

    done = halving.decay_usage(actor="agent:janitor")

    assert (done.ran, done.factor, done.decayed) == (True, 0.5, 1)
    assert done.cutoff == clock.now - timedelta(seconds=60)
    assert halving.retrieval_counts([fact]) == {fact: 5.0}
    [event] = halving.events(tags=["retrieval-counts-decayed.v1"])
    assert event.data == RetrievalCountsDecayed(factor=0.5, cutoff=done.cutoff)
    assert (event.actor, event.position) == ("agent:janitor", done.position)


def test_facts_never_retrieved_or_at_zero_are_not_affected(halving: Memory, clock: Clock) -> None:
    once, never = knows(halving, "Alice", "Bob"), knows(halving, "Alice", "Carol")
    retrieve(halving, once)
    clock.advance(61)
    first = halving.decay_usage()
    clock.advance(61)

    second = halving.decay_usage()

    assert first.decayed == 1 and second.decayed == 0
    assert halving.retrieval_counts([once, never]) == {once: 0.0}


def test_a_fact_retrieved_within_the_interval_is_not_affected(tmp_path: Path, clock: Clock) -> None:
    with open_memory(tmp_path / "mem", clock) as memory:
        old, recent = knows(memory, "Alice", "Bob"), knows(memory, "Alice", "Carol")
        retrieve(memory, old, recent, times=4)
        clock.advance(86_400)
        retrieve(memory, recent)
        clock.advance(1)

        done = memory.decay_usage()

        assert (done.factor, done.decayed) == (0.95, 1)
        assert memory.retrieval_counts([old, recent]) == {old: 3.0, recent: 5.0}


def test_counts_are_truncated_as_the_reference_does(tmp_path: Path, clock: Clock) -> None:
    with open_memory(tmp_path / "mem", clock) as memory:
        nineteen, one = knows(memory, "Alice", "Bob"), knows(memory, "Alice", "Carol")
        retrieve(memory, nineteen, times=19)
        retrieve(memory, one)
        clock.advance(86_401)

        memory.decay_usage()

        assert memory.retrieval_counts([nineteen, one]) == {nineteen: 18.0, one: 0.0}


def test_a_pass_runs_at_most_once_per_interval_unless_forced(halving: Memory, clock: Clock) -> None:
    fact = knows(halving, "Alice", "Bob")
    retrieve(halving, fact, times=8)
    clock.advance(61)
    first = halving.decay_usage()
    position = halving.log.last_position()
    clock.advance(30)

    early = halving.decay_usage()
    written = halving.log.last_position()
    forced = halving.decay_usage(force=True)
    clock.advance(60)  # an interval after the forced pass, not the first one
    due = halving.decay_usage()

    assert (early.ran, early.position, early.decayed) == (False, 0, 0)
    assert early.previous is not None and early.next_due == early.previous + timedelta(seconds=60)
    assert written == position
    assert forced.ran and forced.decayed == 1 and forced.previous == early.previous
    assert due.ran
    assert halving.retrieval_counts([fact]) == {fact: 1.0}
    assert first.next_due < due.next_due


def test_pending_usage_is_recorded_before_a_pass(tmp_path: Path, clock: Clock) -> None:
    with open_memory(tmp_path / "mem", clock, "[memory.recall]\nusage_batch = 100\n") as memory:
        fact = knows(memory, "Alice", "Bob")
        memory.recall("Alice")
        clock.advance(86_401)

        memory.decay_usage()

        tags = [e.tag for e in memory.events(start=memory.log.last_position() - 1)]
        assert tags == ["facts-retrieved.v1", "retrieval-counts-decayed.v1"]
        assert memory.retrieval_counts([fact]) == {fact: 1.0}


def test_a_rebuild_gives_the_same_counts_and_passes(halving: Memory, clock: Clock) -> None:
    a, b = knows(halving, "Alice", "Bob"), knows(halving, "Alice", "Carol")
    retrieve(halving, a, times=6)
    clock.advance(61)
    retrieve(halving, b, times=3)
    halving.decay_usage()
    retrieve(halving, a)
    clock.advance(61)
    halving.decay_usage()
    counts = halving.retrieval_counts([a, b])
    with halving.store.read() as connection:
        before = dump(connection)

    halving.rebuild()

    assert counts == {a: 2.0, b: 1.0}
    assert halving.retrieval_counts([a, b]) == counts
    with halving.store.read() as connection:
        assert dump(connection) == before


def test_a_read_only_memory_refuses_a_pass(halving: Memory, tmp_path: Path) -> None:
    knows(halving, "Alice", "Bob")

    with (
        halving.replay(until=halving.log.last_position(), into=tmp_path / "past") as past,
        pytest.raises(ApexmemError, match="read-only"),
    ):
        past.decay_usage()
