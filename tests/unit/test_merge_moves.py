"""A merge moves the source's current facts into the target's slots (apexmem.service.moves)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from apexmem import HashingEmbedder, Memory, parse_settings
from apexmem.service.moves import MOVED

JOB: dict[str, Any] = {
    "subject_type": "person",
    "relation": "works_at",
    "object_type": "organization",
}
PEOPLE: dict[str, Any] = {"subject_type": "person", "object_type": "person"}


def year(value: int) -> datetime:
    return datetime(value, 1, 1, tzinfo=UTC)


def employers(memory: Memory, when: str | None = None) -> list[str | None]:
    found = memory.facts_about("Alice", valid_at=when) if when else memory.facts_about("Alice")
    return [f.object for f in found if f.relation == "works_at"]


def current(memory: Memory) -> list[tuple[str, str, str | None]]:
    return sorted((f.subject, f.relation, f.object) for f in memory.current_facts())


def two_employers(memory: Memory) -> None:
    memory.assert_fact(subject="Alice", object="Acme", valid_from=year(2020), **JOB)
    memory.assert_fact(subject="Alicia", object="Globex", valid_from=year(2021), **JOB)
    memory.merge(source="Alicia", target="Alice", entity_type="person")


def test_a_merge_leaves_one_current_value_of_a_single_valued_relation(memory: Memory) -> None:
    two_employers(memory)

    assert employers(memory, "2020-06-01T00:00:00Z") == ["Acme"]
    assert employers(memory, "2022-06-01T00:00:00Z") == ["Globex"]
    assert employers(memory) == ["Globex"]
    assert memory.assert_fact(subject="Alicia", object="Hooli", **JOB).outcome == "superseded"
    assert employers(memory) == ["Hooli"]
    before = current(memory)
    memory.rebuild()
    assert current(memory) == before


def test_the_moved_fact_keeps_its_history_and_the_past_as_it_was_known(memory: Memory) -> None:
    memory.assert_fact(subject="Alice", object="Acme", valid_from=year(2020), **JOB)
    globex = memory.assert_fact(subject="Alicia", object="Globex", valid_from=year(2021), **JOB)
    told = memory.clock()
    memory.merge(source="Alicia", target="Alice", entity_type="person")

    tags = [(e.tag, getattr(e.data, "reason", None)) for e in memory.history(fact=globex.fact_id)]
    assert tags == [("fact-asserted.v1", None), ("fact-retracted.v1", MOVED)]
    then = memory.as_of(known_at=told)
    assert [f.object for f in then.facts_about("Alicia") if f.relation == "works_at"] == ["Globex"]
    assert [f.object for f in then.facts_about("Alice") if f.relation == "works_at"] == ["Acme"]


def test_a_fact_between_the_merged_entities_is_withdrawn(memory: Memory) -> None:
    memory.assert_fact(subject="Alice", relation="knows", object="Alicia", **PEOPLE)
    memory.assert_fact(subject="Alicia", relation="mentors", object="Alice", **PEOPLE)

    memory.merge(source="Alicia", target="Alice", entity_type="person")

    assert current(memory) == []


def test_facts_of_others_about_the_source_land_on_the_target_once(memory: Memory) -> None:
    memory.assert_fact(subject="Bob", relation="knows", object="Alice", confidence=0.5, **PEOPLE)
    memory.assert_fact(subject="Bob", relation="knows", object="Alicia", confidence=0.9, **PEOPLE)

    memory.merge(source="Alicia", target="Alice", entity_type="person")

    [known] = memory.facts_about("Bob")
    assert (known.object, known.confidence) == ("Alice", 0.9)  # reinforced, confidence = max


def test_a_merge_finds_the_facts_the_read_models_have_not_caught_up_with(tmp_path: Path) -> None:
    settings, _ = parse_settings("[memory.projection]\ninline = false\n")
    with Memory.open(tmp_path / "mem", settings=settings, embedder=HashingEmbedder()) as memory:
        two_employers(memory)
        memory.project()
        assert employers(memory) == ["Globex"]
        assert employers(memory, "2020-06-01T00:00:00Z") == ["Acme"]
