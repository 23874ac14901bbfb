"""Full-text windows on PostgreSQL: the older windows' floors, read in one statement, are
the ones read a window at a time (as on SQLite)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pg_schemas import postgres_schema
from sqlalchemy import Connection

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.readmodels import fulltext


@pytest.fixture
def url() -> Iterator[str]:
    with postgres_schema("windows") as made:
        yield made


def _one_at_a_time(connection: Connection, budget: int) -> list[fulltext.Window]:
    """The windows as `fulltext.windows` reads them on SQLite: a floor per window."""
    index = fulltext.facts_fts
    match, floor = fulltext.rarest(connection, index, ["zebra"], budget=budget, prefix=False)
    found = [fulltext.Window(match, floor, None)]
    for _ in range(fulltext.MOST_WINDOWS - 1):
        if floor is None:
            break
        params = {"match": match, "cap": budget, "ceiling": floor}
        rows = fulltext._FLOOR.rows(connection, params, index.name, True)
        ceiling, floor = floor, (rows[0][0] if rows else None)
        found.append(fulltext.Window(match, floor, ceiling))
    return found


def _zebras(memory: Memory, count: int) -> None:
    told = [
        {"subject": f"Keeper {i}", "relation": "feeds", "object": f"zebra {i}"}
        for i in range(count)
    ]
    memory.assert_facts(told)


def test_the_older_windows_on_postgresql_are_those_read_one_at_a_time(url: str) -> None:
    with Memory.open(url, embedder=HashingEmbedder()) as memory:
        _zebras(memory, 20)
        with memory.store.read() as connection:
            asked = {
                budget: list(
                    fulltext.windows(
                        connection, fulltext.facts_fts, ["zebra"], budget=budget, prefix=False
                    )
                )
                for budget in (1, 2, 3, 7, 8, 19, 20)
            }
            expected = {budget: _one_at_a_time(connection, budget) for budget in asked}

    assert asked == expected
    assert len(asked[1]) == fulltext.MOST_WINDOWS
    assert [w.floor is None for w in asked[8]] == [False, False, True]  # 8 + 8 + the last 4
    assert len(asked[20]) == 1


def test_the_floor_on_postgresql_is_the_one_the_ordered_statement_finds(url: str) -> None:
    """Found among the newest rows walked, or (too few there) among every match, or none:
    the row `cap` places below the newest match, as the plain ordered statement says."""
    with Memory.open(url, embedder=HashingEmbedder()) as memory:
        _zebras(memory, 20)
        memory.assert_facts([{"subject": f"Keeper {i}", "relation": "feeds", "object": "lion"}
                             for i in range(30)])  # fmt: skip
        with memory.store.read() as connection:
            match = fulltext.any_query(["zebra"], prefix=False)
            top = fulltext._FLOOR.rows(connection, {"match": match, "cap": 0}, "facts_fts", False)
            for ceiling in (None, top[0][0], top[0][0] - 1):
                for cap in (0, 1, 5, 19, 20, 25):
                    for scan in (1, 10, 40, 1000):
                        params = {"match": match, "cap": cap, "scan": scan, "ceiling": ceiling}
                        below = ceiling is not None
                        walked = fulltext._FLOOR.rows(connection, params, "facts_fts", below, True)
                        ordered = fulltext._FLOOR.rows(
                            connection, params, "facts_fts", below, False
                        )
                        assert walked[0][0] == (ordered[0][0] if ordered else None), params
