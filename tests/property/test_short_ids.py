"""Short fact ids: what a table prints for any id reads back as a range holding that id,
with its version when it prints one, and a located id's short form tells its versions apart."""

from __future__ import annotations

from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from apexmem.cli.ids import id_range, short_fact
from apexmem.events.located import MAX_VERSION, located_id

ids = st.integers(min_value=0, max_value=(1 << 128) - 1).map(lambda n: UUID(int=n))
versions = st.integers(min_value=1, max_value=(1 << 24) - 1)


@given(ids)
def test_the_short_form_of_any_id_reads_back_as_a_range_holding_it(fact: UUID) -> None:
    low, high, version = id_range(short_fact(fact), "FACT_ID")

    assert low <= fact <= high
    assert version is None or version == fact.int & MAX_VERSION


@given(ids, versions, versions)
def test_two_versions_of_one_slot_have_different_short_forms(
    slot: UUID, first: int, second: int
) -> None:
    one, other = located_id(slot, first), located_id(slot, second)

    assert (short_fact(one) == short_fact(other)) == (first == second)
    assert short_fact(one) == f"{str(slot)[:8]}:{first}"


@given(ids, st.integers(min_value=4, max_value=32))
def test_any_prefix_of_a_whole_id_with_or_without_dashes_holds_it(fact: UUID, size: int) -> None:
    text = str(fact)

    for given_ in (text.replace("-", "")[:size], text[:size].rstrip("-")):
        if len(given_.replace("-", "")) >= 4:
            low, high, version = id_range(given_.upper(), "FACT_ID")
            assert low <= fact <= high and version is None
