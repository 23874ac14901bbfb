"""Note-linking passes racing on one memory: the pass that records second starts again from
the first's mark, appends nothing the first did, and links nothing twice.

Two Memory objects on one directory are two processes. The second's pass is run inside the
first's, between its read and its append, so the race is the same on every run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from apexmem import Memory, parse_settings
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events.envelope import NewEvent
from apexmem.events.fact import FactAsserted
from apexmem.events.similarity import NotesLinked
from apexmem.service.linking import LINKING_ID, SIMILAR_TO, Linking

LINKING = "[memory.graph.note_linking]\nsimilarity_threshold = 0.5\n"


@pytest.fixture
def passes(tmp_path: Path, clock: Callable[[], datetime]) -> Iterator[tuple[Memory, Memory]]:
    settings, _ = parse_settings(LINKING)
    first, second = (
        Memory.open(tmp_path / "mem", settings=settings, clock=clock, embedder=HashingEmbedder())
        for _ in range(2)
    )
    first.observe_entity(name="red apple pie", entity_type="concept")
    first.observe_entity(name="red apple pie recipe", entity_type="concept")
    yield first, second
    first.close()
    second.close()


def before_first_call(target: object, name: str, action: Callable[[], object]) -> None:
    """Run `action` once, just before the first call of `target.name`."""
    method = getattr(target, name)
    pending = [action]

    def racing(*args: Any, **kwargs: Any) -> Any:
        while pending:
            pending.pop()()
        return method(*args, **kwargs)

    setattr(target, name, racing)


def tags(memory: Memory) -> list[str]:
    return [e.tag for e in memory.events() if e.tag.startswith(("fact-", "notes-"))]


def test_a_pass_another_pass_overtook_records_nothing_and_links_nothing_twice(
    passes: tuple[Memory, Memory],
) -> None:
    first, second = passes
    overtaking: list[Linking] = []
    # Just before the first pass appends its links and mark, the second records its own.
    before_first_call(first.log, "locked", lambda: overtaking.append(second.link_notes()))

    done = first.link_notes()

    [overtook] = overtaking
    assert (done.entities, done.links) == (0, 0)
    assert done.through == overtook.through
    assert tags(first) == ["fact-asserted.v1", "notes-linked.v1"]
    [link] = [f for f in first.facts_about("red apple pie") if f.relation == SIMILAR_TO]
    assert link.confidence >= 0.5


def test_a_pass_that_loses_to_a_mark_starts_again_from_it_and_links_in_one_append(
    passes: tuple[Memory, Memory],
) -> None:
    first, second = passes
    pie = next(first.events(tags=["entity-observed.v1"]))
    earlier = NotesLinked(through=pie.position + 1, entities=1, links=0, threshold=0.5, model="x")
    mark = NewEvent(stream_id=LINKING_ID, version=1, data=earlier)
    before_first_call(first.log, "locked", lambda: second.log.append([mark]))

    done = first.link_notes()

    assert (done.entities, done.links) == (1, 1)  # the recipe, after the other pass's mark
    assert tags(first) == ["notes-linked.v1", "fact-asserted.v1", "notes-linked.v1"]
    [link, restarted] = [e for e in first.events() if e.tag.startswith(("fact-", "notes-"))][1:]
    assert link.position + 1 == restarted.position  # links and mark: one append
    assert isinstance(link.data, FactAsserted) and link.data.relation == SIMILAR_TO
