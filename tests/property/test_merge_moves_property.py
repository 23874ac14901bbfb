"""After any facts about two people and a merge of one into the other, the merged entity
keeps the slot rules: one employer at any valid time, no fact about itself, and a rebuild
gives what the incremental projection gave."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import HashingEmbedder, Memory

PEOPLE = ("Alice", "Alicia", "Bob")
ORGS = ("Acme", "Globex", "Hooli")
START = datetime(2020, 1, 1, tzinfo=UTC)

facts = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {
                "subject": st.sampled_from(PEOPLE),
                "relation": st.just("works_at"),
                "object": st.sampled_from(ORGS),
                "object_type": st.just("organization"),
                "valid_from": st.integers(0, 6).map(lambda y: START + timedelta(days=365 * y)),
            }
        ),
        st.fixed_dictionaries(
            {
                "subject": st.sampled_from(PEOPLE),
                "relation": st.just("knows"),
                "object": st.sampled_from(PEOPLE),
                "object_type": st.just("person"),
            }
        ).filter(lambda f: f["subject"] != f["object"]),
    ),
    max_size=12,
)


@settings(max_examples=25)  # each example writes, merges and rebuilds a memory
@given(facts)
def test_a_merged_entity_keeps_one_value_per_instant_and_no_fact_about_itself(
    given_facts: list[dict[str, object]],
) -> None:
    with (
        tempfile.TemporaryDirectory() as directory,
        Memory.open(Path(directory) / "mem", embedder=HashingEmbedder()) as memory,
    ):
        for fact in given_facts:
            memory.assert_fact(subject_type="person", **fact)  # type: ignore[arg-type]
        memory.assert_fact(subject="Alice", subject_type="person", relation="knows",
                           object="Alicia", object_type="person")  # fmt: skip
        memory.merge(source="Alicia", target="Alice", entity_type="person")

        for year in range(2019, 2028):
            when = datetime(year, 6, 1, tzinfo=UTC)
            jobs = [
                f for f in memory.facts_about("Alice", valid_at=when)
                if f.relation == "works_at"  # Alicia's count as Alice's now
            ]  # fmt: skip
            assert len(jobs) <= 1, (when, [(f.object, f.valid_from) for f in jobs])
        current = memory.current_facts()
        assert not [f for f in current if f.relation == "knows" and f.subject == f.object]
        seen = sorted((str(f.fact_id), f.valid_until) for f in current)
        memory.rebuild()
        assert sorted((str(f.fact_id), f.valid_until) for f in memory.current_facts()) == seen
