"""Export then ingest keeps the links between facts: for any sequence of facts (some told
again, superseded or retracted, so their ids in the copy are recomputed) and of links told
between them (again, with other strengths, both ways), the copy's fact graph from every fact
is the original's, facts named by what they say."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any
from uuid import UUID

from clocks import Clock
from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import FactGraph, Memory
from apexmem.cli.export import export_lines
from apexmem.cli.ingest import IngestReport, ingest
from apexmem.events.link import LINK_TYPES

PLACES = ("Leeds", "York", "Bath")

writes = st.lists(
    st.one_of(
        st.tuples(st.just("live"), st.integers(0, 1), st.sampled_from(PLACES)),
        st.tuples(st.just("retract"), st.integers(0, 9)),
        st.tuples(
            st.just("link"),
            st.integers(0, 9),
            st.integers(0, 9),
            st.sampled_from(LINK_TYPES),
            st.sampled_from([0.3, 0.8, 1.0]),
        ),
    ),
    min_size=2,
    max_size=14,
)


Said = tuple[frozenset[tuple[Any, ...]], frozenset[tuple[str, str, int]]]


def _said(graph: FactGraph) -> Said:
    """A fact graph with each fact named by its sentence and valid time, not its id."""
    name = {f.fact_id: (f.fact, f.valid_from.isoformat()) for f in graph.facts}
    links = frozenset(
        (name[k.source], name[k.target], k.link_type, k.strength, k.origin) for k in graph.links
    )
    return links, frozenset((*name[f], hops) for f, hops in graph.hops.items())


@settings(max_examples=10, deadline=None)
@given(writes)
def test_export_then_ingest_keeps_every_link(steps: list[tuple[Any, ...]]) -> None:
    clock = Clock()
    with tempfile.TemporaryDirectory(prefix="apexmem-link-export-") as root:
        with Memory.open(Path(root) / "mem", clock=clock) as memory:
            facts: list[UUID] = []
            withdrawn: set[UUID] = set()
            for step in steps:
                clock.advance(1)
                if step[0] == "live":
                    person, place = f"person {step[1]}", step[2]
                    made = memory.assert_fact(
                        subject=person, relation="lives_in", object=place, object_type="location"
                    )
                    facts.append(made.fact_id)
                elif step[0] == "retract" and facts:
                    fact = facts[step[1] % len(facts)]
                    if fact not in withdrawn:
                        memory.retract(fact, reason="wrong")
                        withdrawn.add(fact)
                elif step[0] == "link" and len(facts) > 1:
                    source, target = facts[step[1] % len(facts)], facts[step[2] % len(facts)]
                    if source != target:
                        memory.link(source, target, step[3], step[4])
            lines = list(export_lines(memory.events()))
            graphs = [_said(memory.fact_graph(f, 3)) for f in dict.fromkeys(facts)]

        report = IngestReport()
        with Memory.open(Path(root) / "copy", clock=Clock()) as copy:
            for _ in ingest(copy, lines, report):
                pass
            copied = [_said(copy.fact_graph(f.fact_id, 3)) for f in _every_version(copy)]

        assert report.failed == []
        assert Counter(copied) == Counter(graphs)


def _every_version(memory: Memory) -> list[Any]:
    """Every fact version the memory holds, once."""
    seen: dict[UUID, Any] = {}
    for event in memory.events(tags=["fact-asserted.v1"]):
        seen.setdefault(event.data.fact_id, event.data)
    return list(seen.values())
