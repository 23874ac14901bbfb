"""Current means valid now: without `valid_at`, every fact query and recall sees the
believed versions that hold at the memory's clock time, open-ended or ending later; the
whole-log fold (`snapshot`) is the oracle.

(A hypothesis property over real SQLite files.)
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apexmem import HashingEmbedder, Memory, parse_settings

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PEOPLE = ("Alice Quill", "Bob Quill")
PLACES = ("Acme", "Globex", "Initech")
SETTINGS, _ = parse_settings(
    "[memory.recall]\nrecord_usage = false\ncandidates = 60\n[memory.graph]\nrecall_limit = 60\n"
    "[memory.graph.spreading_activation]\nrecall_timeout_ms = 600000\n"
)

facts = st.lists(
    st.tuples(
        st.sampled_from(PEOPLE),
        st.sampled_from(("works_at", "visits")),
        st.sampled_from(PLACES),
        st.integers(min_value=-400, max_value=200),  # starts: days from now
        st.one_of(st.none(), st.integers(min_value=1, max_value=600)),  # lasts: days, or open
    ),
    min_size=1,
    max_size=8,
)


def holds_now(memory: Memory) -> set[UUID]:
    """The versions the fold says are believed and valid at the clock's time."""
    now = memory.clock()
    return {
        f.fact_id
        for f in memory.snapshot().facts
        if f.standing == "believed"
        and f.valid_from <= now
        and (f.valid_until is None or now < f.valid_until)
    }


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(facts)
def test_without_valid_at_every_query_sees_the_facts_that_hold_now(
    tmp_path_factory: pytest.TempPathFactory, told: list[tuple[Any, ...]]
) -> None:
    directory = tmp_path_factory.mktemp("now") / "mem"
    with Memory.open(
        directory, settings=SETTINGS, clock=lambda: NOW, embedder=HashingEmbedder()
    ) as memory:
        for person, relation, place, starts, lasts in told:
            begin = NOW + timedelta(days=starts)
            memory.assert_fact(
                subject=person,
                subject_type="person",
                relation=relation,
                object=place,
                object_type="organization",
                fact=f"{person} {relation.replace('_', ' ')} {place}",
                valid_from=begin,
                valid_until=None if lasts is None else begin + timedelta(days=lasts),
            )
        expected = holds_now(memory)

        about = {f.fact_id for p in PEOPLE for f in memory.facts_about(p)}
        at_now = {f.fact_id for p in PEOPLE for f in memory.facts_about(p, valid_at=NOW)}
        recalled = {h.fact.fact_id for h in memory.recall("Quill") if h.fact is not None}
        searched = {h.fact_id for h in memory.search_facts("Quill", limit=100)}

    assert about == at_now == expected
    assert recalled <= expected
    assert searched == expected
