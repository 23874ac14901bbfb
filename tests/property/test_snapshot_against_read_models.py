"""The whole-log fold (`snapshot`, `current_facts`) says what the read models say, evictions
included: an archived version is not current, an archived entity is not shown, and what is
observed again is back.

(A hypothesis property over real SQLite files: each example writes, evicts and reads a memory.)
"""

from __future__ import annotations

from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from apexmem import ApexmemError, Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.settings import Settings
from apexmem.events.fact import FactAsserted
from apexmem.readmodels.tables import entities, facts

START = datetime(2024, 1, 1, tzinfo=UTC)
PEOPLE = ("Alice", "Bob Stone", "Carol", "Dan Lone")
PLACES = ("Acme", "Globex")

steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("assert"),
            st.sampled_from(PEOPLE),
            st.sampled_from(("works_at", "uses")),
            st.sampled_from(PLACES),
            st.sampled_from((-400, -200, 0)),
        ),
        st.tuples(st.just("observe"), st.sampled_from(PEOPLE)),
        st.tuples(st.just("again"), st.integers(min_value=0, max_value=20)),
        st.tuples(st.just("retract"), st.integers(min_value=0, max_value=20), st.booleans()),
        st.tuples(st.just("merge"), st.sampled_from(PEOPLE), st.sampled_from(PEOPLE)),
        st.tuples(st.just("evict"), st.sampled_from((1, 100, 200))),
    ),
    min_size=1,
    max_size=10,
)


def capped(cap: int) -> Settings:
    """Entities capped at `cap` (0: no cap), no vectors (not what the fold is about)."""
    base = Settings()
    graph = msgspec.structs.replace(base.memory.graph, max_entities=cap)
    vectors = msgspec.structs.replace(base.memory.vectors, enabled=False)
    memory = msgspec.structs.replace(base.memory, graph=graph, vectors=vectors)
    return msgspec.structs.replace(base, memory=memory)


def apply(
    memory: Memory, clock: list[datetime], said: list[tuple[Any, ...]], step: tuple[Any, ...]
) -> None:
    """Take one step; `said` holds the assertions so far (an "again" repeats one of them)."""
    kind = step[0]
    if kind == "again":
        if not said:
            return
        step = said[step[1] % len(said)]
        kind = step[0]
    if kind == "evict":  # after some days: what ended or went unseen for 90 days goes too
        clock[0] += timedelta(days=step[1])
        memory.evict()
    elif kind == "observe":
        memory.observe_entity(name=step[1], entity_type="person")
    elif kind == "merge":
        with suppress(ApexmemError):  # the same entity, or merged the other way already
            memory.merge(source=step[1], target=step[2], entity_type="person")
    elif kind == "retract":
        asserted = [e.data for e in memory.events(tags=["fact-asserted.v1"])]
        ids = [f.fact_id for f in asserted if isinstance(f, FactAsserted)]
        if ids:
            fact = ids[step[1] % len(ids)]
            end = clock[0] if step[2] else None
            with suppress(ApexmemError):  # withdrawn already, or ended before it began
                memory.retract(fact, valid_until=end, reason="wrong")
    else:
        said.append(step)
        _, subject, relation, place, offset = step
        memory.assert_fact(
            subject=subject,
            subject_type="person",
            relation=relation,
            object=place,
            object_type="organization",
            valid_from=START + timedelta(days=offset),
            # Said in one of two ways: a reinforcement in other words changes the sentence.
            fact=f"{subject} {relation} {place}" + (" lately" if offset % 2 else ""),
        )


def folded(memory: Memory) -> tuple[dict[UUID, str], list[tuple[Any, ...]], set[UUID]]:
    """The fold's entities, every fact version as it stands, and the current versions."""
    snapshot = memory.snapshot()
    versions = sorted(
        (f.fact_id, f.standing, f.confidence, f.valid_until, f.superseded_by, f.fact)
        for f in snapshot.facts
    )
    return snapshot.names, versions, {f.fact_id for f in memory.current_facts()}


def projected(memory: Memory) -> tuple[dict[UUID, str], list[tuple[Any, ...]], set[UUID]]:
    """The same, from the read models: entities not archived, each version's open row."""
    shown = select(entities.c.entity_id, entities.c.name).where(entities.c.archived_at.is_(None))
    c = facts.c
    open_rows = select(
        c.fact_id, c.standing, c.confidence, c.valid_until, c.superseded_by, c.fact
    ).where(c.expired_at.is_(None))
    with memory.store.read() as connection:
        names = {row.entity_id: row.name for row in connection.execute(shown)}
        versions = sorted(tuple(row) for row in connection.execute(open_rows))
    current = {v[0] for v in versions if v[1] == "believed" and v[3] is None}
    return names, versions, current


@settings(max_examples=40)
@given(steps, steps, st.sampled_from((0, 1, 3)))
def test_the_fold_shows_what_the_read_models_show_through_evictions_and_revivals(
    tmp_path_factory: pytest.TempPathFactory,
    before: list[tuple[Any, ...]],
    after: list[tuple[Any, ...]],
    cap: int,
) -> None:
    clock: list[datetime] = [START]
    said: list[tuple[Any, ...]] = []
    directory = tmp_path_factory.mktemp("fold") / "mem"
    with Memory.open(
        directory, clock=lambda: clock[0], embedder=HashingEmbedder(), settings=capped(cap)
    ) as memory:
        # Evictions may come anywhere; the one between makes what comes after revive things.
        for step in [*before, ("evict", 200), *after, ("evict", 100)]:
            apply(memory, clock, said, step)

            assert folded(memory) == projected(memory), step
