"""Eviction: expired versions, orphan entities and entities past the cap are archived by
events; nothing is lost (log, history, earlier views), and observing again brings it back.
The digest's cases (section 7 item 23) are the first three tests."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import msgspec
import pytest
from click.testing import CliRunner
from clocks import START, Clock

from apexmem import Memory
from apexmem.cli import cli
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.eviction import EntityActivity, ExpiredVersion, plan_eviction
from apexmem.domain.settings import Settings, parse_settings
from apexmem.events.errors import ValidationError
from apexmem.readmodels import dump
from apexmem.service import eviction


def settings(**graph: Any) -> Settings:
    base = Settings()
    chosen = msgspec.structs.replace(base.memory.graph, **graph)
    return msgspec.structs.replace(base, memory=msgspec.structs.replace(base.memory, graph=chosen))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def memory(tmp_path: Path, clock: Clock) -> Iterator[Memory]:
    mem = Memory.open(tmp_path / "mem", clock=clock, embedder=HashingEmbedder())
    yield mem
    mem.close()


def capped(tmp_path: Path, clock: Clock, entities: int) -> Memory:
    """A memory in `tmp_path/mem` keeping at most `entities` entities."""
    return Memory.open(
        tmp_path / "mem",
        clock=clock,
        embedder=HashingEmbedder(),
        settings=settings(max_entities=entities),
    )


def job(employer: str, since: datetime) -> dict[str, Any]:
    return {
        "subject": "Alice",
        "subject_type": "person",
        "relation": "works_at",
        "object": employer,
        "object_type": "organization",
        "valid_from": since,
    }


def names(memory: Memory) -> list[str]:
    return [e.name for e in memory.entities()]


def test_an_expired_version_200_days_old_is_archived_with_retention_90(
    memory: Memory, clock: Clock
) -> None:
    old = memory.assert_fact(**job("Acme", START - timedelta(days=400)))
    memory.assert_fact(**job("Globex", clock.days(1)))
    clock.days(200)

    done = memory.evict()

    assert done.expired == 1 and [f.fact_id for f in done.facts] == [old.fact_id]
    history = memory.edge_history(subject="Alice", relation="works_at")
    assert [(f.object, f.standing) for f in history] == [
        ("Globex", "believed"),
        ("Acme", "archived"),
    ]
    assert memory.facts_about("Alice", valid_at=START - timedelta(days=100)) == []


def test_an_orphan_last_seen_200_days_ago_is_archived(memory: Memory, clock: Clock) -> None:
    memory.observe_entity(name="Lonely", entity_type="person")
    clock.days(150)
    memory.observe_entity(name="Recent", entity_type="person")
    clock.days(50)

    done = memory.evict()

    assert done.orphans == 1
    assert [e.name for e in done.entities] == ["Lonely"]
    assert names(memory) == ["Recent"]


def test_five_isolated_entities_with_a_cap_of_three_lose_two(tmp_path: Path, clock: Clock) -> None:
    with capped(tmp_path, clock, 3) as memory:
        for name in ("Ann", "Ben", "Cat", "Dan", "Eve"):
            memory.observe_entity(name=name, entity_type="person")
            clock.days(1)

        done = memory.evict()

        assert done.capped == 2
        assert sorted(e.name for e in done.entities) == ["Ann", "Ben"]  # the oldest seen
        assert names(memory) == ["Cat", "Dan", "Eve"]


def test_the_cap_drops_the_least_connected_then_least_recent_with_their_facts(
    tmp_path: Path, clock: Clock
) -> None:
    with capped(tmp_path, clock, 1) as memory:
        fact = memory.assert_fact(**job("Acme", START))
        clock.days(1)
        memory.observe_entity(name="Newcomer", entity_type="person")
        memory.observe_entity(name="Alice", entity_type="person", summary="seen again")

        done = memory.evict()

        assert [e.name for e in done.entities] == ["Newcomer", "Acme"]
        assert [f.fact_id for f in done.facts] == [fact.fact_id]
        assert names(memory) == ["Alice"]
        assert memory.facts_about("Alice") == []
        assert [f.object for f in memory.as_of(known_at=START).facts_about("Alice")] == ["Acme"]


def test_a_fact_that_ends_later_keeps_its_ends_and_is_capped_with_them(
    tmp_path: Path, clock: Clock
) -> None:
    with capped(tmp_path, clock, 2) as memory:
        until = START + timedelta(days=3650)
        memory.assert_fact(
            subject="Alice", relation="uses", object="Vim", object_type="tool", valid_until=until
        )
        clock.days(120)
        memory.assert_fact(subject="Bob Stone", relation="knows", object="Carol")

        done = memory.evict()

        # Alice and Vim are no orphans (their fact holds until 2034); the cap takes the
        # least recently seen with the facts that name them, bounded or not.
        assert done.orphans == 0 and {e.name for e in done.entities} == {"Alice", "Vim"}
        assert [f.fact for f in done.facts] == ["Alice uses Vim"]
        assert memory.facts_about("Bob Stone") and not memory.facts_about("Vim")


def test_a_dry_run_lists_what_would_go_and_appends_nothing(memory: Memory, clock: Clock) -> None:
    memory.observe_entity(name="Lonely", entity_type="person")
    clock.days(100)
    last = memory.log.last_position()

    planned = memory.evict(dry_run=True)

    assert planned.dry_run and [e.name for e in planned.entities] == ["Lonely"]
    assert memory.log.last_position() == last
    assert names(memory) == ["Lonely"]


def test_archives_survive_a_rebuild_and_a_second_eviction_finds_nothing(
    memory: Memory, clock: Clock
) -> None:
    memory.assert_fact(**job("Acme", START - timedelta(days=400)))
    memory.assert_fact(**job("Globex", clock.days(1)))
    memory.observe_entity(name="Lonely", entity_type="person")
    clock.days(200)
    memory.evict()
    with memory.store.read() as connection:
        before = dump(connection)

    memory.rebuild()
    with memory.store.read() as connection:
        after = dump(connection)
    second = memory.evict()

    assert after == before
    assert (second.expired, second.orphans, second.capped) == (0, 0, 0)


def test_views_of_moments_before_an_archive_still_show_what_it_archived(
    memory: Memory, clock: Clock
) -> None:
    memory.assert_fact(**job("Acme", START - timedelta(days=400)))
    memory.assert_fact(**job("Globex", clock.days(1)))
    memory.observe_entity(name="Lonely", entity_type="person")
    before = clock.days(100)
    clock.days(100)
    memory.evict()

    then = memory.as_of(known_at=before)
    past = then.facts_about("Alice", valid_at=START - timedelta(days=100))

    assert [f.object for f in past] == ["Acme"]
    assert "Lonely" in [e.name for e in then.entities()]
    assert "Lonely" not in names(memory)
    tags = [e.tag for e in memory.history(entity="Alice")]
    assert "fact-archived.v1" in tags and "fact-asserted.v1" in tags


def test_observing_an_archived_entity_or_version_again_brings_it_back(
    memory: Memory, clock: Clock
) -> None:
    old = memory.assert_fact(**job("Acme", START - timedelta(days=400)))
    memory.assert_fact(**job("Globex", clock.days(1)))
    memory.observe_entity(name="Lonely", entity_type="person")
    clock.days(200)
    memory.evict()

    memory.observe_entity(name="Lonely", entity_type="person", summary="back again")
    again = memory.assert_fact(**job("Acme", START - timedelta(days=300)))

    assert again.fact_id == old.fact_id and again.outcome == "reinforced"
    assert "Lonely" in names(memory)
    past = memory.facts_about("Alice", valid_at=START - timedelta(days=100))
    assert [(f.object, f.standing) for f in past] == [("Acme", "believed")]


def test_a_view_of_a_moment_during_an_archive_leaves_the_entity_out_after_it_is_back(
    memory: Memory, clock: Clock, tmp_path: Path
) -> None:
    memory.observe_entity(name="Lonely", entity_type="person", summary="keeps to herself")
    before = clock.days(100)
    clock.days(100)
    memory.evict()
    during = clock.days(10)
    clock.days(10)
    memory.observe_entity(name="Lonely", entity_type="person")  # back
    after = clock.days(10)

    def shown(moment: datetime) -> tuple[list[str], list[str]]:
        then = memory.as_of(known_at=moment)
        return [e.name for e in then.entities()], [h.name for h in then.search_entities("lonely")]

    replayed = memory.replay(until=during, into=tmp_path / "then")
    with replayed:
        in_replay = names(replayed), [h.name for h in replayed.search_entities("lonely")]

    assert shown(before) == (["Lonely"], ["Lonely"])
    assert shown(during) == ([], []) == in_replay
    assert shown(after) == (["Lonely"], ["Lonely"])
    with memory.store.read() as connection:
        incremental = dump(connection)
    memory.rebuild()
    with memory.store.read() as connection:
        assert dump(connection) == incremental
    assert shown(during) == ([], [])


def test_a_fact_told_again_brings_back_the_entities_archived_with_it(
    tmp_path: Path, clock: Clock
) -> None:
    with capped(tmp_path, clock, 2) as memory:
        memory.assert_fact(subject="Deb Lane", relation="knows", object="Eli Moss")
        clock.days(1)
        memory.assert_fact(subject="Fay Hart", relation="knows", object="Gus Reed")
        done = memory.evict()
        assert {e.name for e in done.entities} == {"Deb Lane", "Eli Moss"}

        again = memory.assert_fact(subject="Deb Lane", relation="knows", object="Eli Moss")
        with memory.store.read() as connection:
            incremental = dump(connection)
        memory.rebuild()
        with memory.store.read() as connection:
            rebuilt = dump(connection)

        assert again.outcome == "reinforced"
        assert {"Deb Lane", "Eli Moss"} <= set(names(memory))
        assert {f.object for f in memory.current_facts()} == {"Eli Moss", "Gus Reed"}
        assert set(memory.snapshot().names.values()) >= {"Deb Lane", "Eli Moss"}
        assert rebuilt == incremental


def test_history_of_an_archived_entity_lists_its_events_and_its_archive(
    tmp_path: Path, clock: Clock
) -> None:
    with capped(tmp_path, clock, 2) as memory:
        memory.assert_fact(**job("Globex", START))
        memory.observe_entity(name="Acme", entity_type="organization")
        memory.observe_entity(name="Lagger", entity_type="person")
        memory.evict()

        tags = [e.tag for e in memory.history(entity="Acme")]
        memory.rebuild()
        rebuilt = [e.tag for e in memory.history(entity="Acme")]

        assert "Acme" not in names(memory)
        assert tags == ["entity-observed.v1", "alias-claimed.v1", "entity-archived.v1"]
        assert rebuilt == tags


def test_history_of_an_archived_entity_keeps_its_archived_facts(
    memory: Memory, clock: Clock
) -> None:
    memory.assert_fact(**job("Acme", START - timedelta(days=400)))
    memory.retract(memory.facts_about("Acme")[0].fact_id)
    clock.days(200)
    memory.evict()

    tags = [e.tag for e in memory.history(entity="Acme", entity_type="organization")]

    assert "Acme" not in names(memory)
    assert tags[-1] == "entity-archived.v1"
    assert {"fact-asserted.v1", "fact-retracted.v1"} <= set(tags)


def test_observing_an_archived_entity_again_brings_it_back_by_an_event(
    memory: Memory, clock: Clock
) -> None:
    memory.observe_entity(name="Lonely", entity_type="person")
    clock.days(200)
    memory.evict()

    back = memory.observe_entity(name="Lonely", entity_type="person")
    last = memory.log.last_position()
    again = memory.observe_entity(name="Lonely", entity_type="person")
    with memory.store.read() as connection:
        incremental = dump(connection)
    memory.rebuild()
    with memory.store.read() as connection:
        rebuilt = dump(connection)

    assert back.position == last and not back.created
    assert [e.tag for e in memory.history(entity="Lonely")][-2:] == [
        "entity-archived.v1",
        "entity-observed.v1",
    ]
    assert again.position == 0 and memory.log.last_position() == last  # seen: nothing new
    assert names(memory) == ["Lonely"]
    assert rebuilt == incremental


def test_an_eviction_by_another_process_is_seen_by_a_later_observation(
    tmp_path: Path, clock: Clock
) -> None:
    with Memory.open(tmp_path / "mem", clock=clock, embedder=HashingEmbedder()) as memory:
        memory.observe_entity(name="Lonely", entity_type="person")  # cached by this writer
        clock.days(200)
        with Memory.open(tmp_path / "mem", clock=clock, embedder=HashingEmbedder()) as other:
            other.evict()
        memory.observe_entity(name="Lonely", entity_type="person")

        assert names(memory) == ["Lonely"]
        assert memory.history(entity="Lonely")[-1].tag == "entity-observed.v1"


def test_a_fact_about_an_orphan_told_while_eviction_decides_keeps_it(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Memory.open(tmp_path / "mem", clock=clock, embedder=HashingEmbedder()) as memory:
        memory.observe_entity(name="Xavier", entity_type="person")
        memory.assert_fact(subject="Yolanda", relation="knows", object="Zack")
        clock.days(100)
        other = Memory.open(tmp_path / "mem", clock=clock, embedder=HashingEmbedder())
        planned = eviction._read

        def racing(*args: Any, **kwargs: Any) -> Any:
            seen = planned(*args, **kwargs)
            if not other.facts_about("Xavier"):  # once, between the plan and its append
                other.assert_fact(
                    subject="Yolanda", relation="knows", object="Xavier", object_type="person"
                )
            return seen

        monkeypatch.setattr(eviction, "_read", racing)
        with other:
            done = memory.evict()

        assert done.entities == []  # planned again: Xavier is no orphan now
        assert "Xavier" in names(memory)
        assert [f.object for f in memory.facts_about("Yolanda")] == ["Zack", "Xavier"]


def test_observing_an_entity_a_fact_brought_back_records_it_once(
    memory: Memory, clock: Clock
) -> None:
    memory.observe_entity(name="Lonely", entity_type="person")
    clock.days(200)
    memory.evict()
    memory.assert_fact(**{**job("Acme", clock.now), "subject": "Lonely"})

    memory.observe_entity(name="Lonely", entity_type="person")
    last = memory.log.last_position()
    memory.observe_entity(name="Lonely", entity_type="person")

    assert "Lonely" in names(memory)
    assert memory.log.last_position() == last


def test_a_plan_is_deterministic_and_skips_recent_states() -> None:
    now = START
    old, recent = now - timedelta(days=200), now - timedelta(days=10)
    expired = [
        ExpiredVersion(UUID(int=2), UUID(int=20), old, old),
        ExpiredVersion(UUID(int=1), UUID(int=10), old, recent),  # closed only lately
        ExpiredVersion(UUID(int=3), UUID(int=30), recent, old),
    ]
    activity = [
        EntityActivity(UUID(int=5), old, 0),
        EntityActivity(UUID(int=4), old, 2),
        EntityActivity(UUID(int=6), recent, 0),
        EntityActivity(UUID(int=7), recent, 1),
    ]

    plan, capped = plan_eviction(
        now=now, retention_days=90, max_entities=1, expired=expired, activity=activity
    )

    assert [f.fact_id for f in plan.facts] == [UUID(int=2)]
    assert [e for e, _ in plan.entities] == [UUID(int=5), UUID(int=6), UUID(int=7)]
    assert capped == [UUID(int=6), UUID(int=7)]


def test_apexmem_evict_dry_run_lists_then_evict_reports_counts(tmp_path: Path) -> None:
    db = tmp_path / "mem"
    long_ago = datetime.now(UTC) - timedelta(days=400)
    with Memory.open(db, embedder=HashingEmbedder(), clock=lambda: long_ago) as mem:
        mem.observe_entity(name="Lonely", entity_type="person")
    (db / "apexmem.toml").write_text('[memory.vectors]\nembedder = "hashing"\n')
    runner = CliRunner()

    planned = runner.invoke(cli, ["--db", str(db), "evict", "--dry-run"])
    done = runner.invoke(cli, ["--db", str(db), "--json", "evict"])
    again = runner.invoke(cli, ["--db", str(db), "evict"])
    stats = runner.invoke(cli, ["--db", str(db), "--json", "stats"])

    assert planned.exit_code == done.exit_code == 0, planned.output
    assert "would archive" in planned.output and "Lonely" in planned.output
    assert '"orphans":1' in done.output
    assert "archived: 0 expired" in again.output
    assert '"archived_entities":1' in stats.output


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("expired_edge_retention_days = 0", "memory.graph.expired_edge_retention_days"),
        ("expired_edge_retention_days = 40000", "memory.graph.expired_edge_retention_days"),
        ("max_entities = -1", "memory.graph.max_entities"),
        ("default_decay_rate = nan", "memory.graph.default_decay_rate"),
        ("default_decay_rate = 11.0", "memory.graph.default_decay_rate"),
    ],
)
def test_out_of_range_eviction_and_decay_settings_are_refused_naming_the_key(
    text: str, key: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_settings(f"[memory.graph]\n{text}\n")

    assert refused.value.field == key
