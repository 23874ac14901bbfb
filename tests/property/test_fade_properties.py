"""Decay passes on random sequences of assertions, reinforcements, retractions, rate changes
and clock moves: at each pass's moment the recorded fades agree with the query-time rule.

The rule is what the queries apply: a believed fact is left out when its decayed confidence
is under the threshold (`facts_about` without `include_faded`). After every pass, the facts
recorded as faded (the fold of every pass so far) and still believed are exactly the ones
the rule leaves out at that moment; the pass names faded exactly those left out now that
were not at the previous pass, and restored those left out then and not now.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any
from uuid import UUID

from clocks import Clock
from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.fading import fold_fades
from apexmem.events.fading import FactsFaded

THINGS = ("tea", "coffee", "juice")

steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("assert"),
            st.tuples(
                st.sampled_from(THINGS),
                st.sampled_from([0.12, 0.3, 0.6, 1.0]),
                st.sampled_from(["semantic", "temporal"]),
            ),
        ),
        st.tuples(st.just("retract"), st.integers(0, 5)),
        st.tuples(st.just("tick"), st.sampled_from([0.5, 5, 40, 90, 250])),
        st.tuples(
            st.just("rate"),
            st.tuples(st.sampled_from(["semantic", "temporal"]), st.sampled_from([0.001, 0.05])),
        ),
        st.tuples(st.just("pass"), st.none()),
    ),
    min_size=1,
    max_size=12,
)


def _rule(memory: Memory) -> tuple[set[UUID], set[UUID]]:
    """(believed, left out as faded) now, by the queries' own rule."""
    every = {f.fact_id for f in memory.facts_about("Alice", include_faded=True)}
    shown = {f.fact_id for f in memory.facts_about("Alice")}
    return every, every - shown


def _passes(memory: Memory) -> list[FactsFaded]:
    return [e.data for e in memory.events(tags=["facts-faded.v1"])]


def _step(memory: Memory, clock: Clock, step: str, arg: Any, made: list[UUID]) -> None:
    if step == "assert":
        thing, confidence, edge_type = arg
        ref = memory.assert_fact(
            subject="Alice",
            relation="likes",
            object=thing,
            confidence=confidence,
            edge_type=edge_type,
        )
        if ref.fact_id not in made:  # a reinforcement names the version again
            made.append(ref.fact_id)
    elif step == "retract" and made:
        memory.retract(made.pop(arg % len(made)), reason="test")
    elif step == "tick":
        clock.days(arg)
    elif step == "rate":
        memory.set_decay_rate(*arg)


@settings(max_examples=15, deadline=None)
@given(steps)
def test_at_each_pass_the_recorded_fades_agree_with_the_query_time_rule(
    said: list[tuple[str, Any]],
) -> None:
    clock = Clock()
    with (
        tempfile.TemporaryDirectory(prefix="apexmem-fades-") as root,
        Memory.open(Path(root) / "mem", clock=clock, embedder=HashingEmbedder()) as memory,
    ):
        made: list[UUID] = []
        before: set[UUID] = set()  # left out at the previous pass
        for step, arg in [*said, ("pass", None)]:
            if step != "pass":
                _step(memory, clock, step, arg, made)
                continue
            written = len(_passes(memory))
            done = memory.record_fades()
            believed, left_out = _rule(memory)

            recorded = _passes(memory)
            assert set(fold_fades(recorded)) & believed == left_out
            named = recorded[written:]
            faded = {f.fact_id for p in named for f in p.faded}
            restored = {f.fact_id for p in named for f in p.restored}
            assert faded == left_out - before
            assert restored == (before & believed) - left_out
            assert len(named) == (1 if faded or restored else 0)
            assert all(p.at == clock.now for p in named)
            assert done.position == (0 if not named else memory.log.last_position())
            before = left_out
