"""The write path's state cache: bounded, most recent writes kept, never out of date.

A full cache must drop exactly what is past its size (the least recently written states),
and whatever it drops or keeps, the states it hands the write path are the ones a fresh
fold of the log gives: a writer with a tiny cache writes the same log as one with a big one.

A writer that saw its log empty knows every stream of the log: those it cached, and those
other writers began or changed since (`unknown`, read from the log when needed), so a stream
in neither has no events and the writer skips reading it. The log it writes must be the one
a writer that reads every stream writes, however writers take turns; an eviction, an
erasure or a retry from fresh states ends the shortcut; and should a stream be taken after
all, the append conflicts and is decided again from the log.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import Settings
from apexmem.domain.commands import AddAlias, AssertFact, Command, build
from apexmem.domain.state import AliasState, EntityState, EpisodeState, PolicyState, SlotState
from apexmem.events import ConcurrencyError, EventLog, FactsRetrieved, NewEvent
from apexmem.projections.streams import (
    evolve_alias,
    evolve_entity,
    evolve_episode,
    evolve_policy,
    evolve_slot,
    fold,
)
from apexmem.service.cache import StateCache
from apexmem.service.naming import Resolution
from apexmem.service.pipeline import Pipeline
from apexmem.service.staging import Staging
from apexmem.service.writer import Writer

FOLDS: dict[type, tuple[Any, Callable[[Any, Any], Any]]] = {
    EntityState: (EntityState(), evolve_entity),
    AliasState: (AliasState(), evolve_alias),
    SlotState: (SlotState(), evolve_slot),
    EpisodeState: (EpisodeState(), evolve_episode),
    PolicyState: (PolicyState(), evolve_policy),
}
PEOPLE = ["Alice", "Bob", "Carol", "Dave"]
PLACES = ["Paris", "Lyon", "Nice"]
DAYS = [datetime(2020, 1, 1, tzinfo=UTC) + timedelta(days=d) for d in (0, 30, 90, 400)]


def ticking_clock() -> Callable[[], datetime]:
    """A clock that starts at 2024-01-01 UTC and moves one millisecond per reading."""
    ticks = 0

    def now() -> datetime:
        nonlocal ticks
        ticks += 1
        return datetime(2024, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ticks)

    return now


def test_a_full_cache_keeps_exactly_its_size_and_the_latest_writes() -> None:
    cache = StateCache(size=3)

    cache.put_all((n, f"state-{n}") for n in range(1, 6))
    cache.put_all([(3, "state-3 again")])
    cache.put(UUID(int=9), "state-9")

    assert len(cache) == 3
    assert cache.streams() == [5, 3, 9]
    assert cache.get(UUID(int=3)) == "state-3 again"
    assert cache.get(UUID(int=1)) is None


def test_reading_a_state_does_not_save_it_from_eviction() -> None:
    cache = StateCache(size=2)
    cache.put_all([(1, "a"), (2, "b")])

    assert cache.get(UUID(int=1)) == "a"
    cache.put_all([(3, "c")])

    assert cache.streams() == [2, 3]


@given(
    size=st.integers(min_value=1, max_value=8),
    batches=st.lists(st.lists(st.integers(min_value=0, max_value=20), max_size=12), max_size=10),
)
def test_the_cache_holds_the_most_recently_written_streams_in_write_order(
    size: int, batches: list[list[int]]
) -> None:
    cache = StateCache(size=size)
    written: list[int] = []  # every key, most recent write last, each once

    for number, batch in enumerate(batches):
        cache.put_all((key, (number, key)) for key in batch)
        for key in batch:
            if key in written:
                written.remove(key)
            written.append(key)

    assert len(cache) == min(size, len(written))
    assert cache.streams() == written[len(written) - len(cache) :]
    last_write = {key: (n, key) for n, batch in enumerate(batches) for key in batch}
    assert all(cache.get(UUID(int=key)) == last_write[key] for key in cache.streams())


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
ALIASES = st.builds(
    lambda entity, alias: build(
        AddAlias, {"entity": entity, "entity_type": "person", "alias": alias}
    ),
    st.sampled_from(PEOPLE),
    st.sampled_from(["Ally", "Bobby", "Caz", "Davey"]),
)
BATCHES = st.lists(st.lists(ASSERTIONS | ALIASES, min_size=1, max_size=6), min_size=1, max_size=6)

SEED_STREAM = UUID(int=99)


def _writer(log: EventLog, settings: Settings, *, cache: StateCache | None = None) -> Writer:
    """A writer on its own pipeline (no read models to project)."""
    pipeline = Pipeline(log, retries=settings.memory.log.write_retries, project=lambda: None)
    return Writer(pipeline, log, settings, ticking_clock(), cache=cache)


NO_RETRY = msgspec.convert({"memory": {"log": {"write_retries": 0}}}, Settings)
"""A conflict is raised to the caller instead of decided again."""


def write(
    path: Path, batches: list[list[Command]], cache: StateCache, *, seeded: bool = False
) -> list[tuple[Any, ...]]:
    """Run the batches through a writer with this cache; the log's events as comparable rows.

    `seeded` first appends an unrelated event (left out of the rows) from another log
    instance, so the writer never saw the log empty and reads every stream."""
    if seeded:
        other = EventLog(path, clock=lambda: datetime(2023, 1, 1, tzinfo=UTC))
        other.append([NewEvent(stream_id=SEED_STREAM, version=1, data=FactsRetrieved(fact_ids=[]))])
        other.close()
    log = EventLog(path, clock=ticking_clock())
    try:
        writer = _writer(log, Settings(), cache=cache)
        for batch in batches:
            writer.execute(batch)
        folded = log.read_streams([UUID(int=key) for key in cache.streams()])
        for key in cache.streams():
            stream = UUID(int=key)
            cached = cache.get(stream)
            initial, evolve = FOLDS[type(cached)]
            assert cached == fold(evolve, initial, (e.data for e in folded.get(stream, [])))
        return [
            (e.stream_id, e.version, e.tag, e.recorded_at, e.data)
            for e in log.read()
            if e.stream_id != SEED_STREAM
        ]
    finally:
        log.close()


@settings(max_examples=25)
@given(size=st.integers(min_value=1, max_value=6), batches=BATCHES)
def test_a_writer_with_a_tiny_cache_writes_the_log_a_big_cache_writes(
    size: int, batches: list[list[Command]]
) -> None:
    with tempfile.TemporaryDirectory() as work:
        small = StateCache(size=size)

        with_small = write(Path(work) / "small.db", batches, small)
        with_big = write(Path(work) / "big.db", batches, StateCache())

    assert with_small == with_big
    assert len(small) <= size


PAIRS = st.tuples(st.sampled_from(PEOPLE), st.sampled_from(["person", "organization"]))


@given(
    committed=st.dictionaries(PAIRS, st.integers(0, 9)),
    batch=st.dictionaries(PAIRS, st.integers(10, 19)),
    merged=st.booleans(),
    asked=st.lists(PAIRS),
)
def test_the_known_names_of_many_pairs_are_the_known_name_of_each(
    committed: dict[tuple[str, str], int],
    batch: dict[tuple[str, str], int],
    merged: bool,
    asked: list[tuple[str, str]],
) -> None:
    def resolution(n: int) -> Resolution:
        return Resolution(UUID(int=n + 1), False, -1, f"entity {n}")

    cache = StateCache()
    cache.put_names({pair: resolution(n) for pair, n in committed.items()}, merged=False)
    with tempfile.TemporaryDirectory() as work:
        log = EventLog(Path(work) / "events.db")
        try:
            staging = Staging(log, cache)
            staging.resolved.update({pair: resolution(n) for pair, n in batch.items()})
            staging.merged = merged

            one_by_one = {p: k for p in asked if (k := staging.known_name(*p)) is not None}
            assert staging.known_names(asked) == one_by_one
        finally:
            log.close()


@settings(max_examples=25, deadline=None)
@given(batches=BATCHES)
def test_a_writer_that_skips_reading_new_streams_writes_the_log_one_that_reads_writes(
    batches: list[list[Command]],
) -> None:
    complete_cache, reading_cache = StateCache(), StateCache()
    with tempfile.TemporaryDirectory() as work:
        complete = write(Path(work) / "complete.db", batches, complete_cache)
        reading = write(Path(work) / "reading.db", batches, reading_cache, seeded=True)

    assert complete_cache.complete_at is not None
    assert reading_cache.complete_at is None
    assert complete == reading


@contextmanager
def two_logs(path: Path) -> Iterator[tuple[EventLog, EventLog]]:
    """Two instances of one log file, as two writer processes hold it."""
    first_log = EventLog(path, clock=ticking_clock())
    other_log = EventLog(path, clock=ticking_clock())
    try:
        yield first_log, other_log
    finally:
        first_log.close()
        other_log.close()


class CountingLog(EventLog):
    """A log that counts the streams its reads of many streams asked for."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, clock=ticking_clock())
        self.asked: set[int] = set()

    def read_streams(self, stream_ids: Any, *, after_version: int = 0) -> Any:
        self.asked.update(stream.int for stream in stream_ids)
        return super().read_streams(stream_ids, after_version=after_version)


def test_another_writers_append_keeps_the_shortcut_and_its_streams_are_read(
    tmp_path: Path,
) -> None:
    cache = StateCache()
    path = tmp_path / "events.db"
    first_log, other_log = CountingLog(path), EventLog(path)
    try:
        first = _writer(first_log, NO_RETRY, cache=cache)
        other = _writer(other_log, Settings())
        first.execute([assertion("Alice", "lives_in", "Paris")])
        complete_after_own_write = cache.complete_at
        other.execute([assertion("Bob", "lives_in", "Lyon")])
        seen = (complete_after_own_write or 0) + 1
        others = {e.stream_id.int for e in other_log.read(start=seen)}
        first_log.asked.clear()
        # Bob's streams are the other writer's (read), Carol's are new (not read).
        [again, new] = first.execute(
            [assertion("Bob", "lives_in", "Lyon"), assertion("Carol", "knows", "Alice")]
        )  # raises on a conflict
        begun = {e.stream_id.int for e in first_log.read(start=seen) if e.version == 1} - others
        head = first_log.last_position()
    finally:
        first_log.close()
        other_log.close()

    assert complete_after_own_write is not None and complete_after_own_write > 0
    assert cache.complete_at == head
    assert cache.unknown.isdisjoint(others)  # read, and cached with the batch
    assert others & first_log.asked
    assert begun and begun.isdisjoint(first_log.asked)
    assert getattr(again, "outcome", None) == "reinforced"
    assert getattr(new, "outcome", None) == "created"


def two_writers_write(
    path: Path, turns: list[tuple[int, list[Command]]], *, seeded: bool
) -> list[tuple[Any, ...]]:
    """Two writers on two instances of one log take `turns` (writer, batch); the log's events
    as comparable rows. Unseeded, each first looks at the empty log (and skips reading new
    streams from then on); `seeded`, neither ever saw it empty, so both read every stream."""
    if seeded:
        seed = EventLog(path, clock=lambda: datetime(2023, 1, 1, tzinfo=UTC))
        seed.append([NewEvent(stream_id=SEED_STREAM, version=1, data=FactsRetrieved(fact_ids=[]))])
        seed.close()
    caches = [StateCache(), StateCache()]
    with two_logs(path) as logs:
        writers = [_writer(log, Settings(), cache=c) for log, c in zip(logs, caches, strict=True)]
        for writer in writers:
            writer.execute([])
        for number, batch in turns:
            writers[number].execute(batch)
        for writer in writers:  # each forgets what the other changed since its last batch
            writer.execute([])
        for log, cache in zip(logs, caches, strict=True):
            assert (cache.complete_at is None) == seeded
            folded = log.read_streams([UUID(int=key) for key in cache.streams()])
            for key in cache.streams():
                cached = cache.get(UUID(int=key))
                initial, evolve = FOLDS[type(cached)]
                found = folded.get(UUID(int=key), [])
                assert cached == fold(evolve, initial, (e.data for e in found))
        return [
            (e.stream_id, e.version, e.tag, e.data)
            for e in logs[0].read()
            if e.stream_id != SEED_STREAM
        ]


@settings(max_examples=25, deadline=None)
@given(turns=st.lists(st.tuples(st.sampled_from([0, 1]), BATCHES.map(lambda b: b[0])), max_size=8))
def test_two_writers_that_skip_reading_new_streams_write_the_log_two_that_read_write(
    turns: list[tuple[int, list[Command]]],
) -> None:
    with tempfile.TemporaryDirectory() as work:
        skipping = two_writers_write(Path(work) / "skipping.db", turns, seeded=False)
        reading = two_writers_write(Path(work) / "reading.db", turns, seeded=True)

    assert skipping == reading


def test_a_stream_taken_after_all_conflicts_and_is_decided_again_from_the_log(
    tmp_path: Path,
) -> None:
    cache = StateCache()
    with two_logs(tmp_path / "events.db") as (first_log, other_log):
        first = _writer(first_log, NO_RETRY, cache=cache)
        retrying = _writer(first_log, Settings(), cache=cache)
        other = _writer(other_log, Settings())
        first.execute([assertion("Alice", "lives_in", "Paris")])
        other.execute([assertion("Bob", "lives_in", "Lyon")])
        # Wrongly: Bob's streams are not cached (and the cache did not see other's append).
        cache.complete_at = cache.synced_at = first_log.last_position()
        with pytest.raises(ConcurrencyError):
            first.execute([assertion("Bob", "lives_in", "Lyon")])
        cache.complete_at = cache.synced_at = first_log.last_position()  # again, for retrying
        [again] = retrying.execute([assertion("Bob", "lives_in", "Lyon")])
        slot = first_log.read_stream(getattr(again, "slot_id", SEED_STREAM))

    assert getattr(again, "outcome", None) == "reinforced"
    assert [e.tag for e in slot] == ["fact-asserted.v1", "fact-reinforced.v1"]


def test_evicting_or_merging_states_clears_what_the_cache_knows_of_the_log() -> None:
    evicting = StateCache(size=2)
    evicting.complete(5)
    evicting.put_all([(1, SlotState()), (2, SlotState())])
    kept = evicting.complete_at
    evicting.put_all([(3, SlotState())])
    merging = StateCache()
    merging.complete(5)
    merging.forget([UUID(int=7)])
    merging.update(StateCache())

    assert kept == 5
    assert evicting.complete_at is None
    assert merging.complete_at is None
    assert merging.unknown == set()


def test_a_forgotten_state_is_unknown_until_it_is_cached_again() -> None:
    cache = StateCache()
    cache.put_all([(1, SlotState()), (2, SlotState())])
    cache.forget([UUID(int=1)])  # not complete: nothing to know
    was_unknown = set(cache.unknown)
    cache.complete(5)
    cache.forget([UUID(int=2), UUID(int=3)], names=False)
    forgotten = set(cache.unknown)
    cache.put_all([(3, SlotState())])

    assert was_unknown == set()
    assert cache.complete_at == 5
    assert forgotten == {2, 3}
    assert cache.unknown == {2}
