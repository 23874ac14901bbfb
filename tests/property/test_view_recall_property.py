"""A view's recall is the memory's recall at the view's moment: `as_of(known_at=S,
valid_at=T).recall(q)` answers exactly as `recall(q, known_at=S, valid_at=T)` does, on a small
random memory with vectors (the hashing embedder) and both walks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apexmem import HashingEmbedder, Memory, parse_settings

START = datetime(2024, 1, 1, tzinfo=UTC)
PEOPLE = ("Alice Zebra", "Bob Zebra", "Carol Yak")
PLACES = ("Zebra Works", "Yak Labs", "Okapi Inc")
SETTINGS, _ = parse_settings(
    "[memory.recall]\nrecord_usage = false\n"
    "[memory.graph.spreading_activation]\nrecall_timeout_ms = 600000\n"
)
"""No usage recorded: the two recalls must see the same retrieval counts. No time budget
that a loaded machine could exhaust in one recall and not the other (a cut-short recall
answers with less)."""

step = st.one_of(
    st.tuples(
        st.just("assert"),
        st.sampled_from(PEOPLE),
        st.sampled_from(("works_at", "visits")),
        st.sampled_from(PLACES),
        st.integers(min_value=0, max_value=30),
    ),
    st.tuples(st.just("retract"), st.integers(min_value=0, max_value=40)),
    st.tuples(st.just("say"), st.sampled_from(PEOPLE), st.sampled_from(("visits", "works"))),
)
steps = st.lists(step, min_size=0, max_size=6)


@contextmanager
def played(
    directory: Path, first: list[tuple[Any, ...]], then: list[tuple[Any, ...]]
) -> Iterator[tuple[Memory, datetime]]:
    """A memory with `first` applied, the moment between, then `then`; its clock stops after."""
    now = [START]
    ticking = [True]

    def clock() -> datetime:
        if ticking[0]:
            now[0] += timedelta(minutes=1)
        return now[0]

    with Memory.open(directory, settings=SETTINGS, clock=clock, embedder=HashingEmbedder()) as mem:
        told: list[Any] = []
        for chosen in first:
            apply(mem, told, chosen)
        moment = clock()
        for chosen in then:
            apply(mem, told, chosen)
        ticking[0] = False  # both recalls measure decay at the same now
        yield mem, moment


def apply(memory: Memory, told: list[Any], chosen: tuple[Any, ...]) -> None:
    if chosen[0] == "assert":
        _, person, relation, place, days = chosen
        made = memory.assert_fact(
            subject=person,
            subject_type="person",
            relation=relation,
            object=place,
            object_type="organization",
            fact=f"{person} {relation.replace('_', ' ')} {place}",
            valid_from=START + timedelta(days=days),
        )
        told.append(made.fact_id)
    elif chosen[0] == "retract" and told:
        fact = told[chosen[1] % len(told)]
        if any(f.fact_id == fact for p in PEOPLE for f in memory.facts_about(p)):
            memory.retract(fact, reason="told wrong")
    elif chosen[0] == "say":
        _, person, word = chosen
        memory.record_message(episode="chat", speaker="user", text=f"{person} said {word}")


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps,
    steps,
    st.tuples(
        st.sampled_from(("Alice visits", "where does Bob work", "Zebra Works")),
        st.sampled_from(("bfs", "activation")),
        st.booleans(),
        st.one_of(st.none(), st.integers(min_value=0, max_value=40)),
    ),
)
def test_a_views_recall_answers_as_recall_at_its_moment(
    tmp_path_factory: pytest.TempPathFactory,
    first: list[tuple[Any, ...]],
    then: list[tuple[Any, ...]],
    asked: tuple[str, str, bool, int | None],
) -> None:
    question, mode, known_then, valid_day = asked
    root = tmp_path_factory.mktemp("view")
    with played(root / "mem", first, then) as (memory, moment):
        known_at = moment if known_then else None
        valid_at = None if valid_day is None else START + timedelta(days=valid_day)
        view = memory.as_of(known_at=known_at, valid_at=valid_at)

        seen = view.recall(question, mode=mode)
        recalled = memory.recall(question, mode=mode, known_at=known_at, valid_at=valid_at)

    assert seen == recalled
