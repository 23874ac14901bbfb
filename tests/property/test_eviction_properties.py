"""Eviction loses nothing: every view of a moment before it answers as before, and its
archive events rebuild into the same read models."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.settings import Settings
from apexmem.readmodels import dump

START = datetime(2024, 1, 1, tzinfo=UTC)
PEOPLE = ("Alice", "Bob Stone", "Carol")
PLACES = ("Acme", "Globex", "Hooli")

steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("assert"),
            st.sampled_from(PEOPLE),
            st.sampled_from(("works_at", "uses")),
            st.sampled_from(PLACES),
            st.integers(min_value=-400, max_value=0),
        ),
        st.tuples(st.just("observe"), st.sampled_from((*PEOPLE, "Dan Lone"))),
        st.tuples(st.just("wait"), st.integers(min_value=1, max_value=150)),
    ),
    min_size=1,
    max_size=12,
)


def apply(memory: Memory, clock: list[datetime], step: tuple[Any, ...]) -> None:
    if step[0] == "wait":
        clock[0] += timedelta(days=step[1])
    elif step[0] == "observe":
        memory.observe_entity(name=step[1], entity_type="person")
    else:
        _, subject, relation, place, offset = step
        memory.assert_fact(
            subject=subject,
            subject_type="person",
            relation=relation,
            object=place,
            object_type="organization",
            valid_from=clock[0] + timedelta(days=offset),
        )


def views(memory: Memory, known_at: datetime) -> list[Any]:
    """Everything a view of `known_at` shows (faded facts included), at several valid times.

    A fact state is compared without `expired_at`: when the state ended is learned later
    (by the archive, as by any later revision); the state itself is what was known. So is
    an entity without `last_seen`, which a later observation moves.
    """
    view = memory.as_of(known_at=known_at)
    entities = view.entities(limit=100)
    shown: list[Any] = [[msgspec.structs.replace(e, last_seen=e.first_seen) for e in entities]]
    for name in PEOPLE + PLACES:
        rows = view.facts_about(name, include_faded=True)
        for days in (-300, -100, 0):
            when = known_at + timedelta(days=days)
            rows += view.facts_about(name, valid_at=when, include_faded=True)
        shown.append([msgspec.structs.replace(r, expired_at=None) for r in rows])
    return shown


def capped(cap: int) -> Settings:
    """Entities capped at `cap` (0: no cap), no vectors (not what eviction is about)."""
    base = Settings()
    graph = msgspec.structs.replace(base.memory.graph, max_entities=cap)
    vectors = msgspec.structs.replace(base.memory.vectors, enabled=False)
    memory = msgspec.structs.replace(base.memory, graph=graph, vectors=vectors)
    return msgspec.structs.replace(base, memory=memory)


@contextmanager
def played(
    factory: pytest.TempPathFactory, clock: list[datetime], taken: list[tuple[Any, ...]], cap: int
) -> Iterator[Memory]:
    """A fresh memory on `clock`, entities capped at `cap`, with the steps applied."""
    directory = factory.mktemp("evict") / "mem"
    with Memory.open(
        directory, clock=lambda: clock[0], embedder=HashingEmbedder(), settings=capped(cap)
    ) as memory:
        for step in taken:
            apply(memory, clock, step)
        yield memory


def rebuilt_beside(memory: Memory) -> tuple[Any, Any]:
    """The read models as projected so far, then as a rebuild projects them."""
    with memory.store.read() as connection:
        incremental = dump(connection)
    memory.rebuild()
    with memory.store.read() as connection:
        return incremental, dump(connection)


@settings(max_examples=12)
@given(steps, st.sampled_from((0, 2, 4)), st.integers(min_value=0, max_value=300))
def test_eviction_changes_no_view_of_an_earlier_moment_and_rebuilds_the_same(
    tmp_path_factory: pytest.TempPathFactory, taken: list[tuple[Any, ...]], cap: int, later: int
) -> None:
    clock = [START]
    with played(tmp_path_factory, clock, taken, cap) as memory:
        before = clock[0]
        seen = views(memory, before)
        clock[0] += timedelta(days=later, seconds=1)

        memory.evict()
        incremental, rebuilt = rebuilt_beside(memory)

        assert views(memory, before) == seen
        assert rebuilt == incremental
        assert memory.evict(dry_run=True).facts == []


@settings(max_examples=12)
@given(steps, st.sampled_from((0, 2, 4)), st.integers(min_value=0, max_value=300))
def test_evicted_entities_keep_their_history_and_an_observation_brings_each_back(
    tmp_path_factory: pytest.TempPathFactory, taken: list[tuple[Any, ...]], cap: int, later: int
) -> None:
    clock = [START]
    with played(tmp_path_factory, clock, taken, cap) as memory:
        clock[0] += timedelta(days=later, seconds=1)
        gone = memory.evict().entities
        during = clock[0]
        seen = views(memory, during)
        clock[0] += timedelta(seconds=1)

        archived = [memory.history(entity=e.name, entity_type=e.entity_type) for e in gone]
        for e in gone:
            memory.observe_entity(name=e.name, entity_type=e.entity_type)
        incremental, rebuilt = rebuilt_beside(memory)

        assert views(memory, during) == seen  # back now, archived then

        assert all(h and h[-1].tag == "entity-archived.v1" for h in archived)
        shown = {(e.name, e.entity_type) for e in memory.entities(limit=100)}
        assert {(e.name, e.entity_type) for e in gone} <= shown
        assert rebuilt == incremental
