"""Links between facts on random sequences of links told (again, with other strengths, both
ways): the graph as of any past moment, a replay of the log up to it, and a rebuild of the
read models all agree with the links told by then."""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path
from uuid import UUID

from clocks import Clock
from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import Memory
from apexmem.events.link import LINK_TYPES

SENTENCES = (
    "The heat pump lost its connection",
    "The coordinator firmware is outdated",
    "The Nibe S1155 needs firmware 2.0.4",
    "The bus wiring was replaced",
)

Links = dict[tuple[UUID, UUID, str], float]

steps = st.lists(
    st.tuples(
        st.integers(0, len(SENTENCES) - 1),
        st.integers(0, len(SENTENCES) - 1),
        st.sampled_from(LINK_TYPES),
        st.sampled_from([0.3, 0.8, 1.0]),
    ),
    min_size=1,
    max_size=8,
)


def _seen(memory: Memory, facts: list[UUID], known_at: datetime | None = None) -> Links:
    """Every link the graph shows from or to any fact, as known at `known_at`."""
    return {
        (link.source, link.target, link.link_type): link.strength
        for fact in facts
        for _, link in memory.fact_graph(fact, known_at=known_at).direct()
    }


@settings(max_examples=10, deadline=None)
@given(steps)
def test_as_of_replay_and_rebuild_agree_with_the_links_told(
    said: list[tuple[int, int, str, float]],
) -> None:
    clock = Clock()
    with tempfile.TemporaryDirectory(prefix="apexmem-links-") as root:
        memory = Memory.open(Path(root) / "mem", clock=clock)
        with memory:
            facts = [
                memory.assert_fact(subject=f"thing {i}", relation="noted", fact=s).fact_id
                for i, s in enumerate(SENTENCES)
            ]
            told: Links = {}
            moments: list[tuple[datetime, int, Links]] = []
            for source, target, link_type, strength in said:
                clock.advance(1)
                if source == target:
                    continue
                memory.link(facts[source], facts[target], link_type.upper(), strength)
                told[(facts[source], facts[target], link_type)] = strength
                moments.append((clock.now, memory.log.last_position(), dict(told)))

            for i, (at, position, then) in enumerate(moments):
                assert _seen(memory, facts, known_at=at) == then
                with memory.replay(until=position, into=Path(root) / f"at-{i}") as past:
                    assert _seen(past, facts) == then
            now = _seen(memory, facts)
            memory.rebuild()

            assert now == told
            assert _seen(memory, facts) == told
