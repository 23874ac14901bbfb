"""A recall of an earlier moment finds what a replay of the log up to it finds.

Facts start before or after that moment and end before it, after it or never: the recall
(no `valid_at`) and the replay both see what holds at that moment. The lists are long
enough to hold every match, so the two must agree on which facts and messages answer (their
BM25 scores differ: the full-text statistics of the present count the documents told
since). One full-text question ranks only a few rows at once here, so the windows past a
common word's newest matches are walked too. The questions' words are
in sentences, not names: full text alone must find them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apexmem import Memory, parse_settings
from apexmem.readmodels import recall as reads

START = datetime(2024, 1, 1, tzinfo=UTC)
PEOPLE = ("Alice Zebra", "Bob Zebra", "Carol Yak")
PLACES = ("Zebra Works", "Yak Labs", "Okapi Inc")
SETTINGS, _ = parse_settings(
    "[memory.recall]\nrecord_usage = false\ncandidates = 60\n[memory.graph]\nrecall_limit = 60\n"
    "[memory.vectors]\nenabled = false\n"
    "[memory.graph.spreading_activation]\nrecall_timeout_ms = 600000\n"
)
"""Lists long enough for every match; no vectors (they would find what full text misses); no
time budget a loaded machine could exhaust in one of the two recalls."""

step = st.one_of(
    st.tuples(
        st.just("assert"),
        st.sampled_from(PEOPLE),
        st.sampled_from(("works_at", "visits")),
        st.sampled_from(PLACES),
        st.integers(min_value=-30, max_value=30),
        st.one_of(st.none(), st.integers(min_value=1, max_value=60)),
    ),
    st.tuples(st.just("retract"), st.integers(min_value=0, max_value=40)),
    st.tuples(
        st.just("say"), st.sampled_from(PEOPLE), st.sampled_from(("visits", "works", "talked"))
    ),
)
before = st.lists(step, min_size=1, max_size=8)
after = st.lists(step, min_size=0, max_size=12)


@contextmanager
def played(
    directory: Path, first: list[tuple[Any, ...]], then: list[tuple[Any, ...]]
) -> Iterator[tuple[Memory, datetime]]:
    """A memory with the `first` steps applied, then the moment between, then `then`'s."""
    now = [START]

    def clock() -> datetime:
        now[0] += timedelta(minutes=1)
        return now[0]

    with Memory.open(directory, settings=SETTINGS, clock=clock) as memory:
        told: list[Any] = []
        for step in first:
            apply(memory, told, step)
        moment = clock()
        for step in then:
            apply(memory, told, step)
        yield memory, moment


def apply(memory: Memory, told: list[Any], step: tuple[Any, ...]) -> None:
    if step[0] == "assert":
        _, person, relation, place, days, lasts = step
        said = f"{person} {relation.replace('_', ' ')} {place}"
        made = memory.assert_fact(
            subject=person,
            subject_type="person",
            relation=relation,
            object=place,
            object_type="organization",
            fact=said,
            valid_from=START + timedelta(days=days),
            # Ended before the moment, ending after it, or open: what holds then is current.
            valid_until=None if lasts is None else START + timedelta(days=days + lasts),
        )
        told.append(made.fact_id)
    elif step[0] == "retract" and told:
        fact = told[step[1] % len(told)]
        if any(f.fact_id == fact for p in PEOPLE for f in memory.facts_about(p)):
            memory.retract(fact, reason="told wrong")
    elif step[0] == "say":
        _, person, word = step
        memory.record_message(episode="chat", speaker="user", text=f"{person} said {word}")


def answered(found: Any) -> set[tuple[str, str]]:
    return {(h.kind, h.text) for h in found}


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(before, after, st.sampled_from(("visits", "works", "talked visits")))
def test_a_recall_of_an_earlier_moment_finds_what_its_replay_finds(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    first: list[tuple[Any, ...]],
    then: list[tuple[Any, ...]],
    question: str,
) -> None:
    monkeypatch.setattr(reads, "RANKED_ROWS", 3)
    root = tmp_path_factory.mktemp("asof")
    with played(root / "mem", first, then) as (memory, moment):
        found = memory.recall(question, known_at=moment)
        with memory.replay(until=moment, into=root / "then") as replayed:
            expected = replayed.recall(question)

    assert answered(found) == answered(expected)
