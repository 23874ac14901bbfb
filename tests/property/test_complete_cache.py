"""A writer that has seen the whole log does not read streams it lacks: they are new.

While only one writer appends to a log it saw empty, its state cache holds every stream of
the log, so a stream missing from it has no events and the writer skips reading it. The log
it writes must be the one a writer that reads every stream writes; another writer's append,
an eviction or a conflict ends the shortcut; and should a stream be taken after all, the
append conflicts and is decided again from the log.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import Settings
from apexmem.cache import StateCache
from apexmem.domain.commands import AssertFact, build
from apexmem.domain.state import SlotState
from apexmem.events import ConcurrencyError, EventLog, FactsRetrieved, NewEvent
from apexmem.writer import Writer

PEOPLE = ["Alice", "Bob", "Carol", "Dave"]
PLACES = ["Paris", "Lyon", "Nice"]
DAYS = [datetime(2020, 1, 1, tzinfo=UTC) + timedelta(days=d) for d in (0, 30, 90, 400)]
SEED_STREAM = UUID(int=99)
NO_RETRY = msgspec.convert({"memory": {"log": {"write_retries": 0}}}, Settings)
"""A conflict is raised to the caller instead of decided again."""


def ticking_clock() -> Callable[[], datetime]:
    """A clock that starts at 2024-01-01 UTC and moves one millisecond per reading."""
    ticks = 0

    def now() -> datetime:
        nonlocal ticks
        ticks += 1
        return datetime(2024, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ticks)

    return now


def assertion(subject: str, relation: str, target: str, day: int = 0) -> AssertFact:
    """`subject relation target` from a day of DAYS, people and places as their types."""
    return build(
        AssertFact,
        {
            "subject": subject,
            "subject_type": "person",
            "relation": relation,
            "object": target,
            "object_type": "location" if target in PLACES else "person",
            "valid_from": DAYS[day],
            "confidence": 0.8,
        },
    )


ASSERTIONS = st.builds(
    assertion,
    st.sampled_from(PEOPLE),
    st.sampled_from(["lives_in", "works_with", "knows"]),
    st.sampled_from(PLACES + PEOPLE),
    st.integers(min_value=0, max_value=len(DAYS) - 1),
).filter(lambda c: c.subject != c.object)
BATCHES = st.lists(st.lists(ASSERTIONS, min_size=1, max_size=6), min_size=1, max_size=6)


def write(path: Path, batches: list[list[AssertFact]], *, seeded: bool) -> list[tuple[Any, ...]]:
    """The batches through one writer; `seeded` first appends an unrelated event from
    another log instance, so the writer never saw the log empty and reads every stream."""
    if seeded:
        other = EventLog(path, clock=lambda: datetime(2023, 1, 1, tzinfo=UTC))
        other.append([NewEvent(stream_id=SEED_STREAM, version=1, data=FactsRetrieved(fact_ids=[]))])
        other.close()
    log = EventLog(path, clock=ticking_clock())
    cache = StateCache()
    try:
        writer = Writer(log, Settings(), ticking_clock(), cache=cache)
        for batch in batches:
            writer.execute(batch)
        assert (cache.complete_at is None) == seeded
        return [
            (e.stream_id, e.version, e.tag, e.data)
            for e in log.read()
            if e.stream_id != SEED_STREAM
        ]
    finally:
        log.close()


@settings(max_examples=25, deadline=None)
@given(batches=BATCHES)
def test_a_writer_that_skips_reading_new_streams_writes_the_log_one_that_reads_writes(
    batches: list[list[AssertFact]],
) -> None:
    with tempfile.TemporaryDirectory() as work:
        complete = write(Path(work) / "complete.db", batches, seeded=False)
        reading = write(Path(work) / "reading.db", batches, seeded=True)

    assert complete == reading


def test_another_writers_append_ends_the_shortcut_without_a_conflict(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    cache = StateCache()
    first_log = EventLog(path, clock=ticking_clock())
    other_log = EventLog(path, clock=ticking_clock())
    try:
        first = Writer(first_log, NO_RETRY, ticking_clock(), cache=cache)
        other = Writer(other_log, Settings(), ticking_clock())
        first.execute([assertion("Alice", "lives_in", "Paris")])
        complete_after_own_write = cache.complete_at
        head_after_own_write = first_log.last_position()
        other.execute([assertion("Bob", "lives_in", "Lyon")])
        [again] = first.execute([assertion("Bob", "lives_in", "Lyon")])  # raises on a conflict
    finally:
        first_log.close()
        other_log.close()

    assert complete_after_own_write == head_after_own_write > 0
    assert cache.complete_at is None
    assert getattr(again, "outcome", None) == "reinforced"


def test_a_stream_taken_after_all_conflicts_and_is_decided_again_from_the_log(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.db"
    cache = StateCache()
    first_log = EventLog(path, clock=ticking_clock())
    other_log = EventLog(path, clock=ticking_clock())
    try:
        first = Writer(first_log, NO_RETRY, ticking_clock(), cache=cache)
        retrying = Writer(first_log, Settings(), ticking_clock(), cache=cache)
        other = Writer(other_log, Settings(), ticking_clock())
        first.execute([assertion("Alice", "lives_in", "Paris")])
        other.execute([assertion("Bob", "lives_in", "Lyon")])
        cache.complete_at = first_log.last_position()  # wrongly: Bob's streams are not cached
        with pytest.raises(ConcurrencyError):
            first.execute([assertion("Bob", "lives_in", "Lyon")])
        cache.complete_at = first_log.last_position()  # wrongly again, for the retrying writer
        [again] = retrying.execute([assertion("Bob", "lives_in", "Lyon")])
        slot = first_log.read_stream(getattr(again, "slot_id", SEED_STREAM))
    finally:
        first_log.close()
        other_log.close()

    assert getattr(again, "outcome", None) == "reinforced"
    assert [e.tag for e in slot] == ["fact-asserted.v1", "fact-reinforced.v1"]


def test_evicting_forgetting_or_merging_states_clears_what_the_cache_knows_of_the_log() -> None:
    evicting = StateCache(size=2)
    evicting.complete_at = 5
    evicting.put_all([(1, SlotState()), (2, SlotState())])
    kept = evicting.complete_at
    evicting.put_all([(3, SlotState())])
    forgetting = StateCache()
    forgetting.complete_at = 5
    forgetting.forget([UUID(int=1)])
    merging = StateCache()
    merging.complete_at = 5
    merging.update(StateCache())

    assert kept == 5
    assert evicting.complete_at is None
    assert forgetting.complete_at is None
    assert merging.complete_at is None
