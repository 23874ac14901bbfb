"""Typed links between facts (seed 004): told as events, walked both ways, checked first."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from uuid import UUID

import pytest

from apexmem import Memory, parse_settings
from apexmem.cli.ids import short_fact
from apexmem.events.errors import NotFoundError, ValidationError
from apexmem.events.link import FactLinked


def fact(memory: Memory, subject: str, sentence: str) -> UUID:
    return memory.assert_fact(
        subject=subject, relation="noted", value=sentence, fact=sentence
    ).fact_id


@pytest.fixture
def facts(memory: Memory) -> tuple[UUID, UUID, UUID]:
    return (
        fact(memory, "heat pump", "The heat pump lost its Zigbee connection"),
        fact(memory, "zigbee coordinator", "The Zigbee coordinator firmware is outdated"),
        fact(memory, "nibe s1155", "The Nibe S1155 requires firmware 2.0.4 or later"),
    )


def linked(memory: Memory) -> list[FactLinked]:
    found = [e.data for e in memory.events(tags=["fact-linked.v1"])]
    assert all(isinstance(d, FactLinked) for d in found)
    return found


def test_a_link_is_one_event_with_its_type_lowercased(
    memory: Memory, facts: tuple[UUID, UUID, UUID]
) -> None:
    pump, firmware, _ = facts

    made = memory.link(pump, firmware, "CAUSED_BY", 0.8)

    assert (made.source, made.target, made.link_type, made.strength) == (
        pump,
        firmware,
        "caused_by",
        0.8,
    )
    [event] = linked(memory)
    assert (event.source, event.target, event.link_type, event.strength) == (
        pump,
        firmware,
        "caused_by",
        0.8,
    )
    assert made.position == memory.log.last_position()


def test_the_same_link_told_again_writes_nothing_and_another_strength_is_a_new_event(
    memory: Memory, facts: tuple[UUID, UUID, UUID]
) -> None:
    pump, firmware, _ = facts
    first = memory.link(pump, firmware, "caused_by", 0.8)

    again = memory.link(pump, firmware, "Caused_By", 0.8)
    stronger = memory.link(pump, firmware, "caused_by", 1.0)

    assert again == first
    assert stronger.position > first.position
    assert [e.strength for e in linked(memory)] == [0.8, 1.0]
    [(direction, shown)] = memory.fact_graph(pump).direct()
    assert (direction, shown.strength) == ("out", 1.0)


def test_facts_are_named_by_the_short_ids_the_cli_prints(
    memory: Memory, facts: tuple[UUID, UUID, UUID]
) -> None:
    pump, firmware, _ = facts

    made = memory.link(short_fact(pump), short_fact(firmware), "part_of")

    assert (made.source, made.target) == (pump, firmware)
    assert memory.fact_graph(short_fact(firmware)).fact_id == firmware


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"link_type": "likes"}, "link_type"),
        ({"link_type": ""}, "link_type"),
        ({"strength": 0.0}, "strength"),
        ({"strength": -0.5}, "strength"),
        ({"strength": 1.01}, "strength"),
        ({"strength": float("nan")}, "strength"),
        ({"strength": True}, "strength"),
    ],
)
def test_a_bad_link_names_its_field_and_writes_nothing(
    memory: Memory, facts: tuple[UUID, UUID, UUID], change: dict[str, object], field: str
) -> None:
    pump, firmware, _ = facts
    arguments: dict[str, object] = {"link_type": "caused_by", "strength": 1.0, **change}
    before = memory.log.last_position()

    with pytest.raises(ValidationError) as raised:
        memory.link(pump, firmware, **arguments)  # type: ignore[arg-type]

    assert raised.value.field == field
    assert raised.value.value == change[field] or change[field] != change[field]
    assert memory.log.last_position() == before


def test_a_fact_linked_to_itself_or_to_no_fact_is_refused(
    memory: Memory, facts: tuple[UUID, UUID, UUID]
) -> None:
    pump, _, _ = facts
    before = memory.log.last_position()

    with pytest.raises(ValidationError, match="source fact itself") as itself:
        memory.link(pump, pump, "related_to")
    with pytest.raises(NotFoundError, match="target"):
        memory.link(pump, UUID(int=7), "related_to")

    assert itself.value.field == "target"
    assert memory.log.last_position() == before


def test_the_fact_graph_shows_direct_links_both_ways_and_the_facts_reached_within_depth(
    memory: Memory, facts: tuple[UUID, UUID, UUID]
) -> None:
    pump, firmware, nibe = facts
    memory.link(pump, firmware, "caused_by", 0.8)
    memory.link(nibe, firmware, "depends_on", 0.7)

    near = memory.fact_graph(firmware)
    pump_only = memory.fact_graph(pump, depth=1)
    far = memory.fact_graph(pump, depth=2)

    assert sorted((d, link.link_type) for d, link in near.direct()) == [
        ("in", "caused_by"),
        ("in", "depends_on"),
    ]
    assert [f.fact_id for f in pump_only.facts] == [pump, firmware]
    assert [f.fact_id for f in far.facts] == [pump, firmware, nibe]
    assert far.hops == {pump: 0, firmware: 1, nibe: 2}
    assert len(far.direct()) == 1


@pytest.mark.parametrize("depth", [0, 4, 1.5, True])
def test_a_fact_graph_deeper_than_three_or_shallower_than_one_is_refused(
    memory: Memory, facts: tuple[UUID, UUID, UUID], depth: object
) -> None:
    with pytest.raises(ValidationError) as raised:
        memory.fact_graph(facts[0], depth=depth)  # type: ignore[arg-type]

    assert raised.value.field == "depth"


def test_history_of_either_fact_shows_the_link(
    memory: Memory, facts: tuple[UUID, UUID, UUID]
) -> None:
    pump, firmware, nibe = facts
    made = memory.link(pump, firmware, "caused_by")

    from_source = [e.tag for e in memory.history(fact=pump)]
    from_target = [e for e in memory.history(fact=firmware) if e.tag == "fact-linked.v1"]
    elsewhere = [e.tag for e in memory.history(fact=nibe)]

    assert "fact-linked.v1" in from_source
    assert [e.position for e in from_target] == [made.position]
    assert "fact-linked.v1" not in elsewhere


def test_a_link_is_seen_as_of_a_moment_after_it_was_told_and_not_before(
    memory: Memory, facts: tuple[UUID, UUID, UUID]
) -> None:
    pump, firmware, _ = facts
    before = memory.log.last_recorded_at()
    made = memory.link(pump, firmware, "supersedes", 0.5)
    memory.link(pump, firmware, "supersedes", 0.9)

    then = memory.fact_graph(pump, known_at=before)
    told = memory.fact_graph(pump, known_at=made.recorded_at)

    assert then.links == []
    assert [link.strength for link in told.links] == [0.5]


def test_a_rebuild_gives_the_same_links(memory: Memory, facts: tuple[UUID, UUID, UUID]) -> None:
    pump, firmware, nibe = facts
    memory.link(pump, firmware, "caused_by", 0.8)
    memory.link(firmware, nibe, "related_to", 0.3)
    shown = memory.fact_graph(pump, depth=3)

    memory.rebuild()

    assert memory.fact_graph(pump, depth=3) == shown


@pytest.fixture
def words_only(tmp_path: Path, clock: Callable[[], datetime]) -> Iterator[Memory]:
    """A memory recalling by full text and the graph only: a fact shares no word with the
    question is found by nothing but a link."""
    settings, _ = parse_settings("[memory.vectors]\nenabled = false\n")
    with Memory.open(tmp_path / "words", clock=clock, settings=settings) as mem:
        yield mem


def test_recall_brings_a_linked_fact_and_says_which_link(words_only: Memory) -> None:
    pump = fact(words_only, "heat pump", "The heat pump lost its Zigbee connection")
    cause = fact(words_only, "coordinator", "Coordinator firmware is outdated")
    unlinked = [h.item_id for h in words_only.recall("why did the heat pump disconnect?")]
    words_only.link(pump, cause, "caused_by", 0.8)

    hits = {h.item_id: h for h in words_only.recall("why did the heat pump disconnect?")}

    assert cause not in unlinked
    assert cause in hits
    [why] = [w for w in hits[cause].why if w.startswith("fact link:")]
    assert "caused_by" in why and "strength 0.80" in why and "weight 1.5" in why


def test_a_recall_in_the_past_follows_only_the_links_known_then(words_only: Memory) -> None:
    pump = fact(words_only, "heat pump", "The heat pump lost its Zigbee connection")
    cause = fact(words_only, "coordinator", "Coordinator firmware is outdated")
    before = words_only.log.last_recorded_at()
    words_only.link(cause, pump, "related_to", 0.3)

    then = [h.item_id for h in words_only.recall("heat pump", known_at=before)]
    now = [h.item_id for h in words_only.recall("heat pump")]

    assert cause not in then
    assert cause in now


def test_a_stronger_link_type_ranks_what_it_brings_higher(words_only: Memory) -> None:
    pump = fact(words_only, "heat pump", "The heat pump lost its Zigbee connection")
    part = fact(words_only, "bus", "The bus wiring was replaced")
    cause = fact(words_only, "coordinator", "Coordinator firmware is outdated")
    words_only.link(part, pump, "part_of")
    words_only.link(pump, cause, "caused_by")

    order = [h.item_id for h in words_only.recall("heat pump")]

    assert order.index(cause) < order.index(part)


def test_recall_follows_links_as_far_as_max_hops(words_only: Memory) -> None:
    pump = fact(words_only, "heat pump", "The heat pump lost its Zigbee connection")
    cause = fact(words_only, "coordinator", "Coordinator firmware is outdated")
    needs = fact(words_only, "nibe", "Nibe S1155 requires version 2.0.4")
    words_only.link(pump, cause, "caused_by")
    words_only.link(cause, needs, "depends_on", 0.7)

    near = [h.item_id for h in words_only.recall("heat pump", max_hops=1)]
    far = {h.item_id: h for h in words_only.recall("heat pump", max_hops=2)}

    assert cause in near and needs not in near
    assert [w for w in far[needs].why if w.startswith("fact link:")] == [
        f"fact link: {cause.hex[:8]} depends_on {needs.hex[:8]} (its source was found,"
        " strength 0.70, weight 0.9)"
    ]


def test_recall_does_not_walk_through_a_withdrawn_fact(words_only: Memory) -> None:
    pump = fact(words_only, "heat pump", "The heat pump lost its Zigbee connection")
    cause = fact(words_only, "coordinator", "Coordinator firmware is outdated")
    needs = fact(words_only, "nibe", "Nibe S1155 requires version 2.0.4")
    words_only.link(pump, cause, "caused_by")
    words_only.link(cause, needs, "depends_on")
    words_only.retract(cause, reason="wrong")

    hits = [h.item_id for h in words_only.recall("heat pump", max_hops=2)]

    assert cause not in hits and needs not in hits
