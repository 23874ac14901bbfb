"""The whole-log fold after an eviction: archived versions are not current, archived entities
are not shown, and an entity or version observed again is back, as in the read models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from clocks import Clock

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.settings import Settings


@pytest.fixture
def clock() -> Clock:
    return Clock()


def capped_at(entities: int) -> Settings:
    base = Settings()
    graph = msgspec.structs.replace(base.memory.graph, max_entities=entities)
    return msgspec.structs.replace(base, memory=msgspec.structs.replace(base.memory, graph=graph))


@pytest.fixture
def memory(tmp_path: Path, clock: Clock) -> Iterator[Memory]:
    """A memory keeping at most four entities."""
    with Memory.open(
        tmp_path / "mem", clock=clock, embedder=HashingEmbedder(), settings=capped_at(4)
    ) as mem:
        yield mem


def knows(subject: str, target: str) -> dict[str, Any]:
    return {
        "subject": subject,
        "subject_type": "person",
        "relation": "knows",
        "object": target,
        "object_type": "person",
    }


def current(memory: Memory) -> list[str]:
    return sorted(f.fact for f in memory.current_facts())


def shown(memory: Memory) -> list[str]:
    return sorted(memory.snapshot().names.values())


def test_versions_and_entities_past_the_cap_leave_the_current_facts_and_the_names(
    memory: Memory, clock: Clock
) -> None:
    memory.assert_facts([knows("Ann", "Ben"), knows("Ben", "Cid"), knows("Cid", "Ann")])
    memory.assert_facts([knows("Deb", "Eli")])
    clock.days(1)

    done = memory.evict()

    assert [e.name for e in done.entities] == ["Eli"]
    assert current(memory) == ["Ann knows Ben", "Ben knows Cid", "Cid knows Ann"]
    assert shown(memory) == sorted(e.name for e in memory.entities())
    archived = [f for f in memory.snapshot().facts if f.fact == "Deb knows Eli"]
    assert [f.standing for f in archived] == ["archived"]
    assert memory.stats().graph.current_facts == len(memory.current_facts())


def test_an_archived_entity_observed_again_has_its_name_shown_again(
    memory: Memory, clock: Clock
) -> None:
    memory.observe_entity(name="Lonely", entity_type="person")
    clock.days(200)
    memory.evict()
    gone = shown(memory)

    memory.observe_entity(name="Lonely", entity_type="person")

    assert gone == []
    assert shown(memory) == ["Lonely"]


def test_an_archived_version_observed_again_is_current_again(memory: Memory, clock: Clock) -> None:
    memory.assert_facts([knows("Ann", "Ben"), knows("Ben", "Cid"), knows("Cid", "Ann")])
    memory.assert_facts([knows("Deb", "Eli")])
    clock.days(1)
    memory.evict()

    again = memory.assert_fact(**knows("Deb", "Eli"))

    assert again.outcome == "reinforced"
    assert "Deb knows Eli" in current(memory)
    assert shown(memory) == sorted(e.name for e in memory.entities())
    assert memory.stats().graph.current_facts == len(memory.current_facts())
