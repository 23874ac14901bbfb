"""Links between facts everywhere a fact goes: export and ingest (the `link` op), diff, the
`as_of` view, history's wording, the package's names, and erasure."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

import apexmem
from apexmem import FactGraph, FactLink, LinkFacts, LinkRef, Memory, ValidationError
from apexmem.cli.export import export_lines
from apexmem.cli.ingest import IngestReport, ingest
from apexmem.cli.render import summarize
from apexmem.domain.commands import decode_command
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events.erasure import Erased
from apexmem.events.errors import NotFoundError
from apexmem.events.link import FactLinked


def fact(memory: Memory, subject: str, sentence: str, **more: Any) -> UUID:
    return memory.assert_fact(
        subject=subject, relation="noted", value=sentence, fact=sentence, **more
    ).fact_id


def said(
    memory: Memory, graph: FactGraph
) -> tuple[set[tuple[str, str, str, float, str]], dict[str, int]]:
    """A fact graph with facts named by their sentences instead of their ids."""
    sentence = {f.fact_id: f.fact for f in graph.facts}
    links = {
        (sentence[k.source], sentence[k.target], k.link_type, k.strength, k.origin)
        for k in graph.links
    }
    return links, {sentence[f]: hops for f, hops in graph.hops.items()}


def copied(
    memory: Memory, into: Path, clock: Callable[[], datetime]
) -> tuple[Memory, IngestReport]:
    lines = list(export_lines(memory.events()))
    copy = Memory.open(into, clock=clock, embedder=HashingEmbedder())
    report = IngestReport()
    for _ in ingest(copy, lines, report):
        pass
    return copy, report


def test_export_carries_links_and_ingest_into_a_new_memory_gives_the_same_graph(
    memory: Memory, tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    pump = fact(memory, "heat pump", "The heat pump lost its Zigbee connection")
    firmware = fact(memory, "coordinator", "The coordinator firmware is outdated")
    nibe = fact(memory, "nibe s1155", "The Nibe S1155 needs firmware 2.0.4")
    # a slot with three versions, so the linked one's id is recomputed in the copy
    memory.assert_fact(subject="alice", relation="lives_in", object="Leeds")
    memory.assert_fact(subject="alice", relation="lives_in", object="York")
    memory.execute([LinkFacts(source=nibe, target=pump, link_type="related_to",
                              strength=0.3, origin="co-occurrence", recalls=4)])  # fmt: skip
    memory.link(pump, firmware, "CAUSED_BY", 0.8)
    memory.link(pump, firmware, "caused_by", 0.9)
    memory.link(firmware, nibe, "part_of")
    memory.link(nibe, pump, "supersedes", 0.5, actor="ops")

    lines = [json.loads(line) for line in export_lines(memory.events())]
    copy, report = copied(memory, tmp_path / "copy", clock)

    links = [line for line in lines if line["op"] == "link"]
    assert [(k["link_type"], k["strength"]) for k in links] == [
        ("related_to", 0.3),
        ("caused_by", 0.8),
        ("caused_by", 0.9),
        ("part_of", 1.0),
        ("supersedes", 0.5),
    ]
    assert (links[0]["origin"], links[0]["recalls"]) == ("co-occurrence", 4)
    assert links[-1]["actor"] == "ops"
    assert report.failed == [] and report.applied == len(lines)
    with copy:
        for start in (pump, firmware, nibe):
            for depth in (1, 2, 3):
                assert said(copy, copy.fact_graph(start, depth)) == said(
                    memory, memory.fact_graph(start, depth)
                )
        [told] = [e for e in copy.events(tags=["fact-linked.v1"]) if e.actor == "ops"]
        assert isinstance(told.data, FactLinked)
        assert copy.as_of().facts_about("heat pump")[0].fact_id == told.data.target


def test_a_link_to_a_fact_of_a_long_slot_is_named_by_its_id_in_the_copy(
    memory: Memory, tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    first = memory.assert_fact(subject="alice", relation="lives_in", object="Leeds").fact_id
    memory.assert_fact(subject="alice", relation="lives_in", object="York")
    memory.assert_fact(subject="alice", relation="lives_in", object="Leeds")
    other = fact(memory, "bob", "Bob moved with Alice")
    memory.link(other, first, "depends_on", 0.7)

    copy, report = copied(memory, tmp_path / "copy", clock)

    with copy:
        assert report.failed == []
        assert said(copy, copy.fact_graph(other)) == said(memory, memory.fact_graph(other))


def test_a_link_line_is_validated_like_every_command_and_a_bad_one_writes_nothing(
    memory: Memory,
) -> None:
    pump = fact(memory, "heat pump", "The heat pump lost its Zigbee connection")
    firmware = fact(memory, "coordinator", "The coordinator firmware is outdated")
    unknown = UUID(int=7)
    good = {"op": "link", "source": str(pump), "target": str(firmware), "link_type": "CAUSED_BY"}
    bad = [
        ({**good, "link_type": "likes"}, "link_type", "is not a link type"),
        ({**good, "strength": 0}, "strength", "is not a number above 0"),
        ({**good, "strength": 1.5}, "strength", "is not a number above 0"),
        ({**good, "target": str(pump)}, "target", "source fact itself"),
        ({**good, "origin": "guessed"}, "origin", "is invalid"),
        ({**good, "source": "f91955cd"}, "source", "is invalid"),
    ]
    before = memory.log.last_position()

    for line, field, rule in bad:
        with pytest.raises(ValidationError) as raised:
            decode_command(json.dumps(line))
        assert (raised.value.field, rule in raised.value.rule) == (field, True)
    report = IngestReport()
    for _ in ingest(memory, [json.dumps({**good, "target": str(unknown)}).encode()], report):
        pass
    with pytest.raises(NotFoundError, match="source: no fact"):
        memory.execute([LinkFacts(source=unknown, target=pump, link_type="part_of")])

    assert memory.log.last_position() == before
    [failure] = report.failed
    assert failure.line == 1 and f"target: no fact {unknown}" in failure.error
    [done] = memory.execute([decode_command(json.dumps({**good, "strength": 0.8}))])
    again = memory.execute([decode_command(json.dumps({**good, "strength": 0.8}))])
    assert isinstance(done, LinkRef) and done.link_type == "caused_by"
    assert done.position == memory.log.last_position() and again[0].position == 0
    [(direction, link)] = memory.fact_graph(pump).direct()
    assert (direction, link.strength, link.origin) == ("out", 0.8, "told")


def test_an_assertion_and_a_link_in_one_batch_land_in_one_append(memory: Memory) -> None:
    lines = [
        {"op": "assert", "subject": "a", "relation": "noted", "value": "x", "fact": "A says x"},
        {"op": "assert", "subject": "b", "relation": "noted", "value": "y", "fact": "B says y"},
    ]
    asserted = memory.execute([decode_command(json.dumps(line)) for line in lines])
    first, second = (r.fact_id for r in asserted)  # type: ignore[union-attr]
    batch = [
        {"op": "assert", "subject": "c", "relation": "noted", "value": "z", "fact": "C says z"},
        {"op": "link", "source": str(first), "target": str(second), "link_type": "part_of"},
    ]

    results = memory.execute([decode_command(json.dumps(line)) for line in batch])

    assert results[1].position == results[0].position + 1
    assert [k.target for k in memory.fact_graph(first).links] == [second]


def test_diff_lists_the_links_told_between_two_moments(memory: Memory) -> None:
    pump = fact(memory, "heat pump", "The heat pump lost its Zigbee connection")
    firmware = fact(memory, "coordinator", "The coordinator firmware is outdated")
    early = memory.link(pump, firmware, "related_to", 0.4)
    since = memory.clock()
    later = memory.link(pump, firmware, "caused_by", 0.8, actor="ops")
    until = memory.clock()
    memory.link(firmware, pump, "part_of")

    changes = memory.diff(since, until)

    [change] = changes.linked
    assert (change.position, change.source, change.target, change.link_type) == (
        later.position,
        pump,
        firmware,
        "caused_by",
    )
    assert (change.strength, change.origin, change.actor) == (0.8, "told", "ops")
    assert change.source_fact == "The heat pump lost its Zigbee connection"
    assert change.target_fact == "The coordinator firmware is outdated"
    assert changes.asserted == [] and early.position < changes.first


def test_the_as_of_view_walks_the_links_known_at_its_moment(memory: Memory) -> None:
    pump = fact(memory, "heat pump", "The heat pump lost its Zigbee connection")
    firmware = fact(memory, "coordinator", "The coordinator firmware is outdated")
    before = memory.clock()
    memory.link(pump, firmware, "caused_by", 0.5)
    weaker = memory.clock()
    memory.link(pump, firmware, "caused_by", 0.9)
    nibe = fact(memory, "nibe", "The Nibe needs firmware 2.0.4")
    memory.link(firmware, nibe, "part_of")

    assert memory.as_of(known_at=before).fact_graph(pump).links == []
    [then] = memory.as_of(known_at=weaker).fact_graph(pump, depth=2).links
    assert (then.strength, then.target) == (0.5, firmware)
    assert memory.as_of(known_at=weaker).fact_graph(firmware).hops == {firmware: 0, pump: 1}
    now = memory.as_of().fact_graph(pump, depth=2)
    assert now == memory.fact_graph(pump, depth=2)
    assert now.hops == {pump: 0, firmware: 1, nibe: 2}
    with pytest.raises(NotFoundError):
        memory.as_of(known_at=weaker).fact_graph(nibe)


def test_a_link_event_reads_as_a_sentence_in_history(memory: Memory) -> None:
    pump = fact(memory, "heat pump", "The heat pump lost its Zigbee connection")
    firmware = fact(memory, "coordinator", "The coordinator firmware is outdated")
    memory.link(pump, firmware, "caused_by", 0.8)
    memory.execute([LinkFacts(source=firmware, target=pump, link_type="related_to",
                              strength=0.3, origin="co-occurrence", recalls=3)])  # fmt: skip

    told, co = [e.data for e in memory.history(fact=str(pump)) if isinstance(e.data, FactLinked)]

    assert summarize(told) == f"linked {str(pump)[:8]}:1 caused_by {str(firmware)[:8]}:1 (0.80)"
    assert summarize(co) == (
        f"linked {str(firmware)[:8]}:1 related_to {str(pump)[:8]}:1 (0.30, co-occurrence)"
    )


def test_the_link_types_are_the_package_s_own_names(memory: Memory) -> None:
    pump = fact(memory, "heat pump", "The heat pump lost its Zigbee connection")
    firmware = fact(memory, "coordinator", "The coordinator firmware is outdated")

    made = memory.link(pump, firmware, "depends_on")

    assert isinstance(made, FactLink) and isinstance(memory.fact_graph(pump), FactGraph)
    for name in ("FactLink", "FactGraph", "LinkFacts", "LinkRef"):
        assert name in apexmem.__all__


def test_forgetting_a_fact_s_entity_erases_the_links_naming_it_and_nothing_brings_it_back(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    start = clock()
    with Memory.open(tmp_path / "mem", clock=clock, embedder=HashingEmbedder()) as memory:
        private = fact(memory, "priya shah", "Priya Shah reported the heat pump fault")
        pump = fact(memory, "heat pump", "The heat pump lost its Zigbee connection")
        firmware = fact(memory, "coordinator", "The coordinator firmware is outdated")
        memory.link(pump, private, "caused_by", 0.9)
        memory.link(private, firmware, "related_to", 0.4)
        kept = memory.link(pump, firmware, "depends_on", 0.6)
        linked_before = [e.position for e in memory.events(tags=["fact-linked.v1"])]

        report = memory.forget(entity="priya shah", reason="erasure request")

        blanked = {e.position: e.data for e in memory.events() if e.position in linked_before}
        assert report.facts == 1 and memory.verify().ok
        assert [p for p, d in blanked.items() if isinstance(d, Erased)] == linked_before[:2]
        assert isinstance(blanked[kept.position], FactLinked)
        graph = memory.fact_graph(pump, depth=3)
        assert private not in graph.hops and [k.position for k in graph.links] == [kept.position]
        recalled = memory.recall("what caused the heat pump fault", limit=20)
        assert private not in {h.item_id for h in recalled.hits}
        assert all("priya" not in " ".join(h.why).lower() for h in recalled.hits)
        with pytest.raises(NotFoundError):
            memory.fact_graph(private)
        assert [k.position for k in memory.diff(start, clock()).linked] == [kept.position]
        lines = [json.loads(line) for line in export_lines(memory.events())]
        assert [line["op"] for line in lines].count("link") == 1
        memory.rebuild()
        assert memory.fact_graph(pump, depth=3) == graph
