"""A-MEM note linking (`[memory.graph.note_linking]`): `similar_to` facts between entities
whose names are close ("Visual Studio Code"/"Visual Studio Code editor": 0.935 by WordLlama)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from apexmem import Memory, parse_settings
from apexmem.domain.embedding import Embedder, HashingEmbedder
from apexmem.events.similarity import NotesLinked
from apexmem.service.linking import SIMILAR_TO

ON = "[memory.graph.note_linking]\nenabled = true\n"


@pytest.fixture
def opener(tmp_path: Path, clock: Callable[[], datetime]) -> Iterator[Callable[..., Memory]]:
    opened: list[Memory] = []

    def open_memory(toml: str, embedder: Embedder) -> Memory:
        settings, _ = parse_settings(toml)
        memory = Memory.open(
            tmp_path / f"mem{len(opened)}", settings=settings, clock=clock, embedder=embedder
        )
        opened.append(memory)
        return memory

    yield open_memory
    for memory in opened:
        memory.close()


def test_similar_entities_are_linked_after_a_write_when_enabled(
    opener: Callable[..., Memory], wordllama: Embedder
) -> None:
    memory = opener(ON, wordllama)
    memory.observe_entity(name="Visual Studio Code", entity_type="tool")
    memory.observe_entity(name="PostgreSQL", entity_type="technology")

    memory.observe_entity(name="Visual Studio Code editor", entity_type="tool")

    [link] = [f for f in memory.facts_about("Visual Studio Code") if f.relation == SIMILAR_TO]
    assert link.edge_type == "semantic"
    assert link.confidence >= 0.85
    assert link.fact == f"Semantically similar entities (score: {link.confidence:.3f})"
    assert not [f for f in memory.facts_about("PostgreSQL") if f.relation == SIMILAR_TO]


def test_a_pass_links_each_pair_once_with_the_smaller_id_as_subject(
    opener: Callable[..., Memory],
) -> None:
    memory = opener("[memory.graph.note_linking]\nsimilarity_threshold = 0.5\n", HashingEmbedder())
    a = memory.observe_entity(name="red apple pie", entity_type="concept").entity_id
    b = memory.observe_entity(name="red apple pie recipe", entity_type="concept").entity_id

    done = memory.link_notes()

    assert (done.entities, done.links) == (2, 1)
    [link] = [f for f in memory.facts_about("red apple pie") if f.relation == SIMILAR_TO]
    assert (link.subject_id, link.object_id) == (min(a, b), max(a, b))


def test_a_second_pass_with_nothing_new_looks_at_nothing(
    opener: Callable[..., Memory],
) -> None:
    memory = opener("[memory.graph.note_linking]\nsimilarity_threshold = 0.5\n", HashingEmbedder())
    memory.observe_entity(name="red apple pie", entity_type="concept")
    memory.observe_entity(name="red apple pie recipe", entity_type="concept")
    first = memory.link_notes()

    second = memory.link_notes()

    assert (second.entities, second.links) == (0, 0)
    assert second.through == first.through
    marks = [e.data for e in memory.events(tags=["notes-linked.v1"])]
    assert len(marks) == 1 and isinstance(marks[0], NotesLinked)


def test_links_are_capped_at_top_k_per_entity(opener: Callable[..., Memory]) -> None:
    toml = "[memory.graph.note_linking]\nsimilarity_threshold = 0.3\ntop_k = 1\n"
    memory = opener(toml, HashingEmbedder())
    for name in ("red apple pie", "red apple pie recipe", "red apple pie slice"):
        memory.observe_entity(name=name, entity_type="concept")
    memory.link_notes()

    memory.observe_entity(name="red apple pie crust", entity_type="concept")
    done = memory.link_notes()

    assert (done.entities, done.links) == (1, 1)


def test_links_survive_a_rebuild_unchanged(opener: Callable[..., Memory]) -> None:
    memory = opener("[memory.graph.note_linking]\nsimilarity_threshold = 0.5\n", HashingEmbedder())
    memory.observe_entity(name="red apple pie", entity_type="concept")
    memory.observe_entity(name="red apple pie recipe", entity_type="concept")
    memory.link_notes()
    before = memory.facts_about("red apple pie")

    memory.rebuild()

    assert memory.facts_about("red apple pie") == before
    assert len(before) == 1


def test_a_pass_past_its_timeout_stops_after_the_entity_it_is_on_and_the_next_takes_up(
    opener: Callable[..., Memory],
) -> None:
    memory = opener(
        "[memory.graph.note_linking]\nsimilarity_threshold = 0.5\ntimeout_secs = 5\n",
        HashingEmbedder(),
    )
    names = ["red apple pie", "red apple pie recipe", "green apple pie", "green apple tart"]
    for name in names:
        memory.observe_entity(name=name, entity_type="concept")
    ticks = iter(range(0, 1000, 3))  # each look at the clock: 3 s later
    memory._services.linker.clock = lambda: float(next(ticks))

    first = memory.link_notes()  # the deadline (5 s) passes after two entities
    rest = memory.link_notes()

    assert (first.entities, rest.entities) == (2, 2)
    assert first.through < rest.through
    marks = [e.data for e in memory.log.read(tags=["notes-linked.v1"])]
    assert [m.entities for m in marks if isinstance(m, NotesLinked)] == [2, 2]
    linked = {(f.subject, f.object) for n in names for f in memory.facts_about(n)}
    # The same links as one pass with time enough for all four.
    whole = opener("[memory.graph.note_linking]\nsimilarity_threshold = 0.5\n", HashingEmbedder())
    for name in names:
        whole.observe_entity(name=name, entity_type="concept")
    assert whole.link_notes().entities == 4
    assert linked == {(f.subject, f.object) for n in names for f in whole.facts_about(n)}
