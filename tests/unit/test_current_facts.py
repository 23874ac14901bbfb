"""Current means valid now (issue 27, item 3): a fact whose end is still ahead is current,
for every query that is not given `valid_at`, on SQLite and on PostgreSQL alike; one that
ended, or has not started, is not."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pg_schemas import postgres_schema

from apexmem import HashingEmbedder, Memory

TODAY = datetime(2026, 11, 26, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """A memory on each backend whose clock reads TODAY, holding Alice's four facts."""
    if request.param == "sqlite":
        with Memory.open(tmp_path / "mem", clock=lambda: TODAY, embedder=HashingEmbedder()) as m:
            yield _alice(m)
        return
    with (
        postgres_schema("current") as url,
        Memory.open(url, clock=lambda: TODAY, embedder=HashingEmbedder()) as m,
    ):
        yield _alice(m)


def _alice(memory: Memory) -> Memory:
    def fact(relation: str, thing: str, start: str, end: str | None) -> None:
        memory.assert_fact(
            subject="Alice",
            subject_type="person",
            relation=relation,
            object=thing,
            fact=f"Alice {relation.replace('_', ' ')} {thing}",
            valid_from=start,
            valid_until=end,
        )

    fact("works_at", "Globex", "2024-06-01T00:00:00Z", "2030-01-01T00:00:00Z")  # ends later
    fact("lives_in", "Oslo", "2019-01-01T00:00:00Z", None)  # open-ended
    fact("uses", "Perl", "2010-01-01T00:00:00Z", "2020-01-01T00:00:00Z")  # ended
    fact("studies", "Welsh", "2027-01-01T00:00:00Z", None)  # not started yet
    return memory


CURRENT = {"Alice works at Globex", "Alice lives in Oslo"}


def test_a_fact_ending_in_2030_is_current_today_and_an_ended_or_future_one_is_not(
    memory: Memory,
) -> None:
    assert {f.fact for f in memory.facts_about("Alice")} == CURRENT
    assert {h.row.fact for h in memory.search_facts("Alice", limit=10)} == CURRENT
    assert {f.fact for f in memory.traverse("Alice", max_hops=1).facts} == CURRENT
    assert {f.fact for f in memory.current_facts()} == CURRENT  # the whole-log fold agrees
    assert memory.stats().graph.current_facts == len(CURRENT)


def test_recall_and_its_context_block_show_the_fact_ending_later_with_its_dates(
    memory: Memory,
) -> None:
    found = memory.recall("Where does Alice work?")

    assert found[0].text == "Alice works at Globex"
    assert {h.text for h in found.hits} <= CURRENT
    assert "Alice works at Globex [2024-06-01 to 2030-01-01]" in memory.format_context(found)


def test_valid_at_still_picks_another_moment(memory: Memory) -> None:
    then = memory.facts_about("Alice", valid_at="2015-01-01T00:00:00Z")
    later = memory.facts_about("Alice", valid_at="2031-01-01T00:00:00Z")

    assert {f.fact for f in then} == {"Alice uses Perl"}
    assert {f.fact for f in later} == {"Alice lives in Oslo", "Alice studies Welsh"}


def test_a_view_known_at_a_moment_sees_what_held_then(memory: Memory) -> None:
    """As a replay up to that moment does (its clock reads it): the decay and the facts
    current are those of the moment asked about, not of the clock's now."""
    view = memory.as_of(known_at="2029-06-01T00:00:00Z")
    # Unobserved for two and a half years by then, they faded: asked for anyway.
    seen = view.facts_about("Alice", include_faded=True)
    today = view.facts_about("Alice", valid_at=TODAY, include_faded=True)

    assert {f.fact for f in seen} == {*CURRENT, "Alice studies Welsh"}
    assert {f.fact for f in today} == CURRENT


def test_a_question_window_recalls_what_overlaps_it_and_a_position_opens_the_log_there(
    memory: Memory,
) -> None:
    """The window's and the position's statements, on both backends."""
    in_2019 = memory.recall("What did Alice use in 2019?", limit=10)
    first = memory.log.position_at(datetime(2026, 11, 26, tzinfo=UTC))  # the first append

    assert {h.text for h in in_2019 if h.kind == "fact"} >= {
        "Alice uses Perl",
        "Alice lives in Oslo",
    }
    assert "Alice works at Globex" not in {h.text for h in in_2019}
    assert [f.fact for f in memory.as_of(position=first).facts_about("Alice")] == [
        "Alice works at Globex"
    ]
