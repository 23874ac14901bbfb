"""What the write path remembers between batches, and what it must forget.

Names resolved in a committed batch are remembered (`StateCache`), so later batches find
their entities without reading alias and entity streams again; a merge, a failed batch or
a conflict with another writer must never leave a remembered name pointing at the wrong
entity.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from apexmem import (
    AddAlias,
    AssertFact,
    FactRef,
    Memory,
    MergeEntities,
    RetractFact,
    RetractRef,
    ValidationError,
)
from apexmem.domain.commands import build
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.identities import entity_id, fact_id, slot_id


def lives_in(subject: str, place: str, **extra: Any) -> dict[str, Any]:
    """Fields of `<subject> lives_in <place>`, a person and a location."""
    return {
        "subject": subject,
        "subject_type": "person",
        "relation": "lives_in",
        "object": place,
        "object_type": "location",
        **extra,
    }


def merge(source: str, target: str) -> MergeEntities:
    """Merge the person `source` into the person `target`."""
    return build(MergeEntities, {"source": source, "target": target, "entity_type": "person"})


def test_a_name_remembered_from_earlier_batches_follows_a_later_merge(memory: Memory) -> None:
    robert = memory.observe_entity(name="Robert", entity_type="person")
    memory.assert_facts([lives_in("Bob", "Paris")])
    [remembered] = memory.assert_facts([lives_in("Bob", "Lyon")])

    memory.merge(source="Bob", target="Robert", entity_type="person")
    [after] = memory.assert_facts([lives_in("Bob", "Nice")])

    assert remembered.subject_id != robert.entity_id
    assert after.subject_id == robert.entity_id


def test_a_merge_inside_a_batch_moves_the_names_used_after_it(memory: Memory) -> None:
    robert = memory.observe_entity(name="Robert", entity_type="person")
    memory.assert_facts([lives_in("Bob", "Paris")])
    memory.assert_facts([lives_in("Bob", "Lyon")])  # "Bob" is remembered from here on

    results = memory.execute(
        [
            build(AssertFact, lives_in("Bob", "Lille")),
            merge("Bob", "Robert"),
            build(AssertFact, lives_in("Bob", "Nice")),
        ]
    )
    [later] = memory.assert_facts([lives_in("Bob", "Rome")])

    before_merge, after_merge = results[0], results[2]
    assert isinstance(before_merge, FactRef) and isinstance(after_merge, FactRef)
    assert before_merge.subject_id != robert.entity_id
    assert after_merge.subject_id == robert.entity_id
    assert later.subject_id == robert.entity_id


def test_a_batch_that_fails_after_claiming_an_alias_leaves_the_name_unclaimed(
    memory: Memory,
) -> None:
    alice = memory.observe_entity(name="Alice", entity_type="person")
    claim = build(AddAlias, {"entity": "Alice", "entity_type": "person", "alias": "Ally"})
    uses_alias = build(AssertFact, lives_in("Ally", "Paris"))
    refused = build(AssertFact, lives_in("Alice", "Alice", object_type="person"))

    with pytest.raises(ValidationError):
        memory.execute([claim, uses_alias, refused])
    [fact] = memory.assert_facts([lives_in("Ally", "Paris")])

    assert fact.subject_id != alice.entity_id
    assert fact.subject_id == entity_id("person", "ally")


def test_a_fact_asserted_and_retracted_in_one_batch_is_withdrawn(memory: Memory) -> None:
    slot = slot_id(entity_id("person", "alice"), "lives_in", "semantic", None)
    asserted = build(AssertFact, lives_in("Alice", "Paris"))
    retracted = build(RetractFact, {"fact_id": str(fact_id(slot, 1)), "reason": "typo"})

    [fact, retraction] = memory.execute([asserted, retracted])

    assert isinstance(fact, FactRef) and isinstance(retraction, RetractRef)
    assert fact.fact_id == fact_id(slot, 1)
    assert retraction.slot_id == slot
    assert [f for f in memory.current_facts() if f.relation == "lives_in"] == []


def test_a_writer_that_conflicts_with_a_merge_elsewhere_resolves_its_names_again(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    directory = tmp_path / "mem"
    with (
        Memory.open(directory, clock=clock, embedder=HashingEmbedder()) as first,
        Memory.open(directory, clock=clock, embedder=HashingEmbedder()) as second,
    ):
        robert = first.observe_entity(name="Robert", entity_type="person")
        first.assert_facts([lives_in("Bob", "Paris")])
        first.assert_facts([lives_in("Bob", "Lyon")])  # "Bob" is remembered from here on
        second.merge(source="Bob", target="Robert", entity_type="person")
        # Bob's entity stream moved on in the other writer: this append conflicts, and the
        # retry reads the names again under the log's lock.
        first.observe_entity(name="Bob", entity_type="person", summary="builds things")

        [after] = first.assert_facts([lives_in("Bob", "Nice")])

    assert after.subject_id == robert.entity_id


def test_a_large_batch_pauses_the_garbage_collector_and_turns_it_back_on(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    original = memory._writer.batch

    def attempt(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(memory._writer, "batch", attempt)
    memory.assert_fact(**lives_in("Alice", "Paris"))
    memory.assert_facts([lives_in(f"person-{i:03d}", "Lyon") for i in range(100)])

    assert seen == [True, False]  # a single fact leaves the collector alone
    assert gc.isenabled()


def test_a_failed_large_batch_turns_the_collector_back_on(memory: Memory) -> None:
    facts = [lives_in(f"person-{i:03d}", "Lyon") for i in range(100)]
    facts[70] = lives_in("person-070", "person-070", object_type="person")

    with pytest.raises(ValidationError):
        memory.assert_facts(facts)

    assert gc.isenabled()
    assert memory.log.last_position() == 0


def test_the_collector_stays_off_after_a_batch_when_it_was_off(memory: Memory) -> None:
    gc.disable()
    try:
        memory.assert_facts([lives_in(f"person-{i:03d}", "Lyon") for i in range(100)])
        assert not gc.isenabled()
    finally:
        gc.enable()
