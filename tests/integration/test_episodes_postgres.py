"""Episodes on PostgreSQL answer as on SQLite: links from facts asserted in an episode (the
fact rows), from facts reinforced and entities observed in one (link rows), as of any time."""

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock
from pg_schemas import postgres_schema

from apexmem import Memory, parse_settings


@pytest.fixture
def url() -> Iterator[str]:
    with postgres_schema("episodes") as made:
        yield made


def told(memory: Memory, clock: Clock) -> list[datetime]:
    """The same story on any backend; the times a view is asked at."""
    times = []

    def job(person: str, episode: str) -> None:
        memory.assert_fact(
            subject=person, subject_type="person", relation="works_at",
            object="Acme", object_type="organization", episode=episode,
        )  # fmt: skip

    for person, episode in [("Alice", "c1"), ("Bob", "c2")]:
        clock.advance(60)
        job(person, episode)
        times.append(clock())
    clock.advance(60)
    job("Alice", "c3")  # reinforced in c3
    times.append(clock())
    clock.advance(60)
    memory.observe_entity(name="Carol", entity_type="person", episode="c1")
    times.append(clock())
    return times


def answers(memory: Memory, times: list[datetime]) -> list[Any]:
    views: list[Callable[[str], Any]] = [memory.episodes_for]
    views += [memory.as_of(known_at=t).episodes_for for t in times]
    return [
        [(e.conversation, e.mentioned_at, e.messages) for e in view(name)]
        for view in views
        for name in ("Alice", "Acme", "Bob", "Carol")
    ]


def test_episodes_on_postgresql_are_those_on_sqlite(url: str, tmp_path: Path) -> None:
    settings, _ = parse_settings("[memory.vectors]\nenabled = false\n")
    found = []
    for place in (url, str(tmp_path / "mem")):
        clock = Clock()
        with Memory.open(place, settings=settings, clock=clock) as memory:
            times = told(memory, clock)
            found.append(answers(memory, times))
            memory.rebuild()
            assert answers(memory, times) == found[-1]

    assert found[0] == found[1]
    assert [c for c, _, _ in found[1][1]] == ["c1", "c2", "c3"]  # Acme, now
