"""Time in (issue 27, item 4): a question's dates are a valid-time window whose facts are
those valid at some time in it (overlap, not one instant), relative ones counted from now
or `reference_time`, events ("before she moved") dated by the memory; views open at a log
position; bad windows and positions are refused, naming the argument."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apexmem import HashingEmbedder, Memory, ValidationError
from apexmem.cli import cli, render
from apexmem.domain.recall.window import EARLIEST, question_window
from apexmem.readmodels import facts_of
from apexmem.readmodels.moment import Lens, Moment

NOW = datetime(2026, 11, 26, tzinfo=UTC)


def job(memory: Memory, place: str, start: str, end: str | None, relation: str = "works_at") -> Any:
    return memory.assert_fact(
        subject="Dana",
        subject_type="person",
        relation=relation,
        object=place,
        object_type="organization" if relation == "works_at" else "place",
        fact=f"Dana {'works at' if relation == 'works_at' else 'lives in'} {place}",
        valid_from=f"{start}T00:00:00Z",
        valid_until=None if end is None else f"{end}T00:00:00Z",
    )


@pytest.fixture
def dana(memory: Memory) -> Memory:
    """Acme until March 2019, Globex since; moved from Paris to Berlin in June 2018."""
    job(memory, "Acme", "2017-01-01", "2019-03-01")
    job(memory, "Globex", "2019-03-01", None)
    job(memory, "Paris", "2015-01-01", None, relation="lives_in")
    job(memory, "Berlin", "2018-06-01", None, relation="lives_in")
    return memory


def jobs(found: Any) -> set[str]:
    return {h.text for h in found if h.kind == "fact" and "works at" in h.text}


def test_a_year_recalls_every_fact_valid_at_some_time_in_it(dana: Memory) -> None:
    found = dana.recall("Where did Dana work in 2019?", limit=5)

    assert jobs(found) == {"Dana works at Acme", "Dana works at Globex"}
    assert "valid time asked about: 2019-01-01 to 2020-01-01 ('in 2019')" in found[0].why


def test_a_month_or_an_earlier_year_recalls_only_what_held_then(dana: Memory) -> None:
    assert jobs(dana.recall("Where did Dana work in 2018?", limit=5)) == {"Dana works at Acme"}
    assert jobs(dana.recall("Where did Dana work in May 2019?", limit=5)) == {
        "Dana works at Globex"
    }


def test_last_summer_counts_from_the_reference_time(dana: Memory) -> None:
    found = dana.recall(
        "Where did Dana work last summer?", limit=5, reference_time="2018-10-01T00:00:00Z"
    )

    assert jobs(found) == {"Dana works at Acme"}
    assert "valid time asked about: 2018-06-01 to 2018-09-01 ('last summer')" in found[0].why


def test_before_a_year_and_before_she_moved(dana: Memory) -> None:
    before = dana.recall("Where did Dana work before 2019?", limit=5)
    moved = dana.recall("Where did Dana live before she moved?", limit=5)
    after = dana.recall("Where did Dana work after she moved?", limit=5)

    assert jobs(before) == {"Dana works at Acme"}
    assert "valid time asked about: before 2019-01-01 ('before 2019')" in before[0].why
    assert {h.text for h in moved if "lives in" in h.text} == {"Dana lives in Paris"}
    assert "valid time asked about: before 2018-06-01 ('before she moved')" in moved[0].why
    assert jobs(after) == {"Dana works at Acme", "Dana works at Globex"}


def test_an_explicit_window_overlaps_and_valid_at_still_wins(dana: Memory) -> None:
    spanning = dana.recall("Dana work", window=("2019-02-01T00:00:00Z", "2019-04-01T00:00:00Z"))
    instant = dana.recall("Where did Dana work in 2019?", valid_at="2018-01-01T00:00:00Z")

    assert jobs(spanning) == {"Dana works at Acme", "Dana works at Globex"}
    assert jobs(instant) == {"Dana works at Acme"}
    assert not any("valid time asked about" in w for h in instant for w in h.why)


def test_a_window_that_ends_before_it_starts_is_refused_naming_it(dana: Memory) -> None:
    with pytest.raises(ValidationError) as caught:
        dana.recall("Dana", window=("2020-01-01T00:00:00Z", "2019-01-01T00:00:00Z"))

    assert caught.value.field == "window"


def test_periods_seasons_and_bounds_of_a_question() -> None:
    def window(text: str) -> tuple[str, str]:
        found = question_window(text, NOW)
        assert found is not None, text
        return found[0].date().isoformat(), found[1].date().isoformat()

    assert window("in 2019") == ("2019-01-01", "2020-01-01")
    assert window("in May 2023") == ("2023-05-01", "2023-06-01")
    assert window("last year") == ("2025-01-01", "2026-01-01")
    assert window("last summer") == ("2026-06-01", "2026-09-01")
    assert window("in the winter of 2019") == ("2019-12-01", "2020-03-01")
    assert window("after May 2023") == ("2023-06-01", "2026-11-26")
    assert window("between 2018 and 2020") == ("2018-01-01", "2021-01-01")
    assert window("before 2019")[0] == EARLIEST.date().isoformat()
    assert question_window("Where does Dana work?", NOW) is None
    assert question_window("in 3019", NOW) is None  # after now: not a time asked about


# Views at a log position ----------------------------------------------------------------------


def test_a_view_opens_at_a_log_position(memory: Memory) -> None:
    first = job(memory, "Acme", "2017-01-01", None)
    second = job(memory, "Globex", "2019-03-01", None)

    def employers(**at: Any) -> list[str]:
        return [f.object or "" for f in memory.as_of(**at).facts_about("Dana")]

    assert employers(position=first.position) == ["Acme"]
    assert employers(position=second.position) == ["Globex"]
    assert employers(position=0) == []
    found = memory.recall("Where does Dana work?", position=first.position)
    assert jobs(found) == {"Dana works at Acme"}


@pytest.mark.parametrize("position", [-1, 10_000, "3", True])
def test_a_position_outside_the_log_is_refused_naming_it(memory: Memory, position: Any) -> None:
    job(memory, "Acme", "2017-01-01", None)

    with pytest.raises(ValidationError) as caught:
        memory.as_of(position=position)

    assert caught.value.field == "position"


def test_a_position_and_known_at_together_are_refused(memory: Memory) -> None:
    made = job(memory, "Acme", "2017-01-01", None)

    with pytest.raises(ValidationError) as caught:
        memory.as_of(position=made.position, known_at="2024-01-01T00:00:00Z")

    assert caught.value.field == "position"


# The overlap rule for any window ---------------------------------------------------------------

bounds = st.tuples(
    st.integers(min_value=0, max_value=40),  # starts: months after 2015-01
    st.one_of(st.none(), st.integers(min_value=1, max_value=30)),  # lasts: months, or open
)


def month(n: int) -> datetime:
    return datetime(2015 + n // 12, n % 12 + 1, 1, tzinfo=UTC)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.lists(bounds, min_size=1, max_size=6),
    st.integers(min_value=0, max_value=60),
    st.integers(min_value=0, max_value=24),
)
def test_a_window_sees_exactly_the_versions_whose_validity_overlaps_it(
    tmp_path_factory: pytest.TempPathFactory,
    told: list[tuple[int, int | None]],
    opens: int,
    lasts: int,
) -> None:
    start, end = month(opens), month(opens + lasts)
    with Memory.open(
        tmp_path_factory.mktemp("window") / "mem",
        clock=lambda: NOW,
        embedder=HashingEmbedder(),
    ) as memory:
        for i, (begins, months) in enumerate(told):
            memory.assert_fact(
                subject="Dana",
                subject_type="person",
                relation="visits",
                object=f"Place {i}",
                valid_from=month(begins),
                valid_until=None if months is None else month(begins) + timedelta(days=30 * months),
            )
        held = memory.snapshot().facts
        lens = Lens(moment=Moment(during=(start, end), now=NOW))
        with memory.store.read() as connection:
            ids = list({f.subject_id for f in held})
            seen = {f.fact_id for f in facts_of(connection, ids, lens=lens)}

    if start == end:  # an empty window is the instant it starts at
        expected = {
            f.fact_id
            for f in held
            if f.valid_from <= start and (f.valid_until is None or f.valid_until > start)
        }
    else:
        expected = {
            f.fact_id
            for f in held
            if f.valid_from < end and (f.valid_until is None or f.valid_until > start)
        }
    assert seen == expected


def test_the_command_lines_recall_table_says_when_each_fact_held(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(render.console, "width", 200)  # one line a row
    directory = tmp_path / "cli"
    directory.mkdir()
    (directory / "apexmem.toml").write_text('[memory.vectors]\nembedder = "hashing"\n')
    with Memory.open(directory) as memory:
        job(memory, "Acme", "2017-01-01", "2019-03-01")

    result = CliRunner().invoke(
        cli, ["--db", str(directory), "recall", "Where did Dana work in 2018?"]
    )

    assert result.exit_code == 0, result.output
    assert "2017-01-01 to 2019-03-01" in result.output


def test_the_command_line_takes_a_window_and_a_position_where_it_takes_a_time(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(render.console, "width", 200)
    directory = tmp_path / "cli"
    directory.mkdir()
    (directory / "apexmem.toml").write_text('[memory.vectors]\nembedder = "hashing"\n')
    with Memory.open(directory) as memory:
        first = job(memory, "Acme", "2017-01-01", "2019-03-01")
        job(memory, "Globex", "2019-03-01", None)

    def run(*args: str) -> Any:
        return CliRunner().invoke(cli, ["--db", str(directory), *args])

    window = run("recall", "Dana work", "--window", "2019-02-01T00:00:00Z,2019-04-01T00:00:00Z")
    backwards = run("recall", "Dana", "--window", "2020-01-01T00:00:00Z,2019-01-01T00:00:00Z")
    early = run(
        "--json", "timeline", "Dana", "--relation", "works_at", "--position", str(first.position)
    )
    episodes = run("episodes", "Dana", "--position", "0")

    assert "Dana works at Acme" in window.output and "Dana works at Globex" in window.output
    assert isinstance(backwards.exception, ValidationError)  # `main` reports it, exit 2
    assert backwards.exception.field == "window"
    assert [v["object"] for v in json.loads(early.output)] == ["Acme"]
    assert episodes.exit_code == 1  # nobody was known before the first event


MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")  # fmt: skip


@given(
    st.integers(min_value=1900, max_value=NOW.year - 1),  # a month not yet begun is no time asked
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=0, max_value=10),
)
def test_every_period_a_question_names_is_a_window_that_does_not_end_before_it_starts(
    year: int, month: int, more: int
) -> None:
    named = MONTHS[month - 1]
    in_month = question_window(f"Where was Dana in {named} {year}?", NOW)
    between = question_window(f"between {year - more} and {year}", NOW)
    season = question_window(f"in the summer of {year}", NOW)

    assert in_month is not None and between is not None and season is not None
    assert in_month[:2] == (month_start(year, month), month_start(year, month + 1))
    assert between[:2] == (month_start(year - more, 1), month_start(year + 1, 1))
    assert season[0] < season[1]
    for phrase in ("last summer", "last winter", "last year", "last month", f"after {year}"):
        found = question_window(phrase, NOW)
        assert found is not None and found[0] <= found[1] <= max(NOW, found[0])


def month_start(year: int, month: int) -> datetime:
    return datetime(year + (month - 1) // 12, (month - 1) % 12 + 1, 1, tzinfo=UTC)
