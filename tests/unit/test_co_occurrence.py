"""Co-occurrence links (seed 004's coOccurrenceWeight): the usage pass links facts recalled
together often enough since the previous pass, once per pair, and recall then follows them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from uuid import UUID

import pytest

from apexmem import Memory, parse_settings
from apexmem.domain.links import co_occurring
from apexmem.events.errors import ValidationError
from apexmem.events.link import FactLinked

Opener = Callable[..., Memory]


@pytest.fixture
def open_memory(tmp_path: Path, clock: Callable[[], datetime]) -> Iterator[Opener]:
    opened: list[Memory] = []

    def opener(extra: str = "") -> Memory:
        text = "[memory.vectors]\nenabled = false\n" + extra
        settings, _ = parse_settings(text)
        memory = Memory.open(tmp_path / f"mem{len(opened)}", clock=clock, settings=settings)
        opened.append(memory)
        return memory

    yield opener
    for memory in opened:
        memory.close()


def tea_and_coffee(memory: Memory) -> tuple[UUID, UUID]:
    tea = memory.assert_fact(subject="Alice", relation="drinks", object="tea").fact_id
    coffee = memory.assert_fact(subject="Bob", relation="drinks", object="coffee").fact_id
    return tea, coffee


def recalled_together(memory: Memory, times: int) -> None:
    for _ in range(times):
        hits = {h.item_id for h in memory.recall("Alice and Bob")}
        assert len(hits) == 2


def links(memory: Memory) -> list[FactLinked]:
    found = [e.data for e in memory.events(tags=["fact-linked.v1"])]
    assert all(isinstance(d, FactLinked) for d in found)
    return found


def test_facts_recalled_together_three_times_are_linked_related_to_at_0_3(
    open_memory: Opener,
) -> None:
    memory = open_memory()
    tea, coffee = tea_and_coffee(memory)
    recalled_together(memory, 3)

    done = memory.decay_usage(force=True)

    assert done.linked == 1
    [link] = links(memory)
    assert (link.source, link.target) == tuple(sorted((tea, coffee)))
    assert (link.link_type, link.strength, link.origin, link.recalls) == (
        "related_to",
        0.3,
        "co-occurrence",
        3,
    )
    [(direction, shown)] = memory.fact_graph(tea).direct()
    assert direction == ("out" if tea < coffee else "in")
    assert shown.origin == "co-occurrence" and shown.position > done.position


def test_a_later_recall_of_one_brings_the_other(open_memory: Opener) -> None:
    memory = open_memory()
    tea, coffee = tea_and_coffee(memory)
    alone = [h.item_id for h in memory.recall("tea")]
    recalled_together(memory, 3)
    memory.decay_usage(force=True)

    hits = {h.item_id: h for h in memory.recall("tea")}

    assert alone == [tea]
    assert coffee in hits
    assert any("related_to" in w for w in hits[coffee].why)


def test_fewer_recalls_than_the_setting_link_nothing(open_memory: Opener) -> None:
    memory = open_memory()
    tea_and_coffee(memory)
    recalled_together(memory, 2)

    done = memory.decay_usage(force=True)

    assert done.linked == 0
    assert links(memory) == []


def test_a_pair_is_linked_once_and_recalls_before_a_pass_are_not_counted_again(
    open_memory: Opener,
) -> None:
    memory = open_memory()
    tea_and_coffee(memory)
    recalled_together(memory, 3)
    memory.decay_usage(force=True)
    recalled_together(memory, 5)

    again = memory.decay_usage(force=True)

    assert again.linked == 0
    assert len(links(memory)) == 1


def test_each_recall_counts_in_one_window_only(open_memory: Opener) -> None:
    memory = open_memory()
    tea_and_coffee(memory)
    recalled_together(memory, 2)
    memory.decay_usage(force=True)
    recalled_together(memory, 2)

    done = memory.decay_usage(force=True)

    assert done.linked == 0


def test_a_pair_already_linked_by_hand_is_left_as_it_is(open_memory: Opener) -> None:
    memory = open_memory()
    tea, coffee = tea_and_coffee(memory)
    memory.link(coffee, tea, "supersedes", 0.9)
    recalled_together(memory, 3)

    done = memory.decay_usage(force=True)

    assert done.linked == 0
    assert [link.link_type for link in links(memory)] == ["supersedes"]


def test_the_settings_choose_the_count_and_the_strength(open_memory: Opener) -> None:
    memory = open_memory(
        "[memory.graph.fact_links]\nco_occurrence_recalls = 2\nco_occurrence_weight = 0.5\n"
    )
    tea_and_coffee(memory)
    recalled_together(memory, 2)

    memory.decay_usage(force=True)

    assert [link.strength for link in links(memory)] == [0.5]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("co_occurrence_recalls = 1", "memory.graph.fact_links.co_occurrence_recalls"),
        ("co_occurrence_weight = 0.0", "memory.graph.fact_links.co_occurrence_weight"),
        ("co_occurrence_weight = 1.5", "memory.graph.fact_links.co_occurrence_weight"),
    ],
)
def test_settings_out_of_range_are_refused_naming_the_key(text: str, field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        parse_settings(f"[memory.graph.fact_links]\n{text}\n")

    assert raised.value.field == field


def test_a_pass_not_due_links_nothing(open_memory: Opener) -> None:
    memory = open_memory()
    tea_and_coffee(memory)
    memory.decay_usage(force=True)
    recalled_together(memory, 3)

    skipped = memory.decay_usage()

    assert not skipped.ran and skipped.linked == 0
    assert links(memory) == []


def test_pairs_are_counted_once_per_recall_and_ordered_by_count() -> None:
    a, b, c = UUID(int=1), UUID(int=2), UUID(int=3)

    pairs = co_occurring([[b, a, a], [a, b, c], [c, a], [a, b]], at_least=2)

    assert pairs == [(a, b, 3), (a, c, 2)]
