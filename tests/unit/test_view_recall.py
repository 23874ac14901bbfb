"""`as_of` views recall and answer `similar` inside their moment, and record nothing."""

from __future__ import annotations

import pytest

from apexmem import HashingEmbedder, Memory
from apexmem.domain.ontology import Ontology
from apexmem.events.errors import ApexmemError
from apexmem.service.view import View


def test_a_view_does_not_find_a_fact_told_after_its_moment_similar(memory: Memory) -> None:
    early = memory.assert_fact(subject="Alice", relation="plays", value="the violin")
    moment = memory.clock()
    late = memory.assert_fact(subject="Alice", relation="plays", value="the viola")

    then = [s.item_id for s in memory.as_of(known_at=moment).similar("Alice plays the viola")]
    now = [s.item_id for s in memory.similar("Alice plays the viola")]

    assert late.fact_id not in then and early.fact_id in then
    assert late.fact_id in now


def test_a_view_does_not_find_an_entity_or_message_told_after_its_moment(memory: Memory) -> None:
    memory.assert_fact(subject="Alice", subject_type="person", relation="plays", value="chess")
    memory.record_message(episode="chat", speaker="user", text="Alice plays chess")
    moment = memory.clock()
    memory.assert_fact(subject="Zed Quux", subject_type="person", relation="plays", value="go")
    memory.record_message(episode="chat", speaker="user", text="Zed Quux plays go")
    view = memory.as_of(known_at=moment)

    entities = [s.item_id for s in view.similar("Zed Quux", kind="entity", k=10)]
    messages = view.similar("Zed Quux plays go", kind="message", k=10)

    assert {e.entity_id for e in memory.entities("Zed Quux")}.isdisjoint(entities)
    assert len(messages) == 1
    assert len(memory.similar("Zed Quux plays go", kind="message", k=10)) == 2


def test_a_views_recall_is_the_recall_at_its_moment_and_records_no_usage(
    memory: Memory,
) -> None:
    memory.assert_fact(subject="Alice", relation="works_at", object="Acme")
    moment = memory.clock()
    memory.assert_fact(subject="Alice", relation="works_at", object="Globex")
    position = memory.log.last_position()

    found = memory.as_of(known_at=moment).recall("where does Alice work")
    memory.close()  # any usage held would be written now
    with Memory.open(memory.directory, embedder=HashingEmbedder()) as reopened:
        last = reopened.log.last_position()

    assert [h.fact.object for h in found if h.fact is not None] == ["Acme"]
    assert last == position


def test_a_view_built_without_a_recaller_says_how_to_get_one(memory: Memory) -> None:
    view = View(memory.store, ready=lambda: None, ontology=Ontology)

    with pytest.raises(ApexmemError, match=r"Memory\.as_of"):
        view.recall("Alice")
