"""The write path's state cache: bounded, most recent writes kept, never out of date.

A full cache must drop exactly what is past its size (the least recently written states),
and whatever it drops or keeps, the states it hands the write path are the ones a fresh
fold of the log gives: a writer with a tiny cache writes the same log as one with a big one.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import Settings
from apexmem.cache import StateCache
from apexmem.domain.commands import AddAlias, AssertFact, Command, build
from apexmem.domain.state import AliasState, EntityState, EpisodeState, PolicyState, SlotState
from apexmem.events import EventLog
from apexmem.naming import Resolution
from apexmem.projections.streams import (
    evolve_alias,
    evolve_entity,
    evolve_episode,
    evolve_policy,
    evolve_slot,
    fold,
)
from apexmem.staging import Staging
from apexmem.writer import Writer

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


def assertion(subject: str, relation: str, target: str, day: int) -> AssertFact:
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


def write(path: Path, batches: list[list[Command]], cache: StateCache) -> list[tuple[Any, ...]]:
    """Run the batches through a writer with this cache; the log's events as comparable rows."""
    log = EventLog(path, clock=ticking_clock())
    try:
        writer = Writer(log, Settings(), ticking_clock(), cache=cache)
        for batch in batches:
            writer.execute(batch)
        folded = log.read_streams([UUID(int=key) for key in cache.streams()])
        for key in cache.streams():
            stream = UUID(int=key)
            cached = cache.get(stream)
            initial, evolve = FOLDS[type(cached)]
            assert cached == fold(evolve, initial, (e.data for e in folded.get(stream, [])))
        return [(e.stream_id, e.version, e.tag, e.recorded_at, e.data) for e in log.read()]
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
