"""A word commoner than the rows one full-text question ranks is ranked over its newest
matches first, then over older ones while too few can be shown: a recall of an earlier
moment, of an earlier valid time, or of a word whose newest sentences were withdrawn still
finds what was believed (found by QA: it returned nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from apexmem import HashingEmbedder, Memory
from apexmem.domain.settings import parse_settings
from apexmem.readmodels import fulltext
from apexmem.readmodels import recall as reads
from apexmem.service import recall as recall_module
from apexmem.service.nearest import Rounds, nearest_shown

START = datetime(2024, 1, 1, tzinfo=UTC)
LATER = 150  # newer sentences holding the word, past the (patched) ranked rows
NO_VECTORS = "[memory.vectors]\nenabled = false\n"


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    monkeypatch.setattr(reads, "RANKED_ROWS", 25)  # 150 later rows: 7 windows of 25
    now = [START]

    def clock() -> datetime:
        now[0] += timedelta(seconds=1)
        return now[0]

    # Full text and the graph only: the vectors would find the sentence by themselves.
    with Memory.open(tmp_path / "mem", clock=clock, settings=parse_settings(NO_VECTORS)[0]) as mem:
        yield mem


def fans(count: int = LATER, **bounds: Any) -> list[dict[str, Any]]:
    return [
        {
            "subject": f"Zebra Fan {i:03d}",
            "relation": "likes",
            "object": f"Poster {i:03d}",
            "object_type": "concept",
            "fact": f"Zebra fan {i} likes zebra poster {i}",
            **bounds,
        }
        for i in range(count)
    ]


def keeper(**bounds: Any) -> dict[str, Any]:
    return {
        "subject": "Zebra Keeper",
        "relation": "feeds",
        "object": "Zebra Herd",
        "object_type": "concept",
        "fact": "Zebra Keeper feeds the zebra herd daily",
        **bounds,
    }  # bounds: valid times, or another sentence


def texts(found: Any) -> set[str]:
    return {h.text for h in found if h.kind == "fact"}


def test_a_recall_of_an_earlier_moment_finds_what_was_known_then(
    memory: Memory, tmp_path: Path
) -> None:
    memory.assert_fact(**keeper())
    then = memory.clock()
    memory.assert_facts(fans())

    found = memory.recall("zebra", known_at=then)
    with memory.replay(until=then, into=tmp_path / "then") as replayed:
        expected = replayed.recall("zebra")

    assert "Zebra Keeper feeds the zebra herd daily" in texts(found)
    assert texts(found) == texts(expected)
    assert "Zebra Keeper" in found.seeds


def test_a_recall_of_an_earlier_valid_time_finds_what_held_then(memory: Memory) -> None:
    memory.assert_fact(
        **keeper(
            valid_from=datetime(2010, 1, 1, tzinfo=UTC),
            valid_until=datetime(2015, 1, 1, tzinfo=UTC),
        )
    )
    memory.assert_facts(fans(valid_from=datetime(2020, 1, 1, tzinfo=UTC)))

    found = memory.recall("zebra", valid_at=datetime(2012, 1, 1, tzinfo=UTC))

    assert texts(found) == {"Zebra Keeper feeds the zebra herd daily"}


def test_a_word_whose_newest_sentences_were_withdrawn_still_finds_the_believed_one(
    memory: Memory,
) -> None:
    memory.assert_fact(**keeper())
    newer = memory.assert_facts(fans())
    for ref in newer:
        memory.retract(ref.fact_id, reason="a test")

    found = memory.recall("zebra")

    assert "Zebra Keeper feeds the zebra herd daily" in texts(found)


def test_the_vectors_of_an_earlier_moment_look_past_the_nearest_told_since(
    tmp_path: Path,
) -> None:
    now = [START]

    def clock() -> datetime:
        now[0] += timedelta(seconds=1)
        return now[0]

    said = "Keeper feeds the herd daily at dawn by the river, a zebra among them"
    with Memory.open(tmp_path / "vec", clock=clock, embedder=HashingEmbedder()) as memory:
        memory.assert_fact(**keeper(fact=said))
        then = memory.clock()
        # Nearer to the question than the keeper's long sentence, and more than the first
        # question to the index asks for (3x the pool of 10), fewer than the second (12x).
        nearer = fans(60)
        memory.assert_facts([{**f, "fact": f"zebra {i:03d}"} for i, f in enumerate(nearer)])

        found = memory.recall("zebra", known_at=then)

    (hit,) = [h for h in found if h.text == said]
    assert any(why.startswith("vector") for why in hit.why)


def test_a_word_is_read_over_a_bounded_number_of_windows(memory: Memory) -> None:
    memory.assert_facts(fans(20))
    with memory.store.read() as connection:
        read = list(
            fulltext.windows(connection, fulltext.facts_fts, ["zebra"], budget=1, prefix=False)
        )
        few = list(
            fulltext.windows(connection, fulltext.facts_fts, ["zebra"], budget=8, prefix=False)
        )

    assert len(read) == fulltext.MOST_WINDOWS  # 20 rows, one a window: the oldest are left
    assert len(few) == 3 and few[-1].floor is None  # 8 + 8 + the last 4


def test_the_index_is_asked_again_while_too_few_can_be_shown_and_twice_at_most() -> None:
    asked: list[int] = []
    items = [(f"item {i:03d}", 1.0 - i / 1000) for i in range(500)]

    def nearest(wanted: int) -> list[tuple[str, float]]:
        asked.append(wanted)
        return items[:wanted]

    def shown_from(first: int) -> Any:
        return lambda near: {i: i for i, _ in near if int(i.split()[1]) >= first}

    rounds = Rounds(first=30, enough=10, rounds=recall_module._VECTOR_ROUNDS)
    old = nearest_shown(nearest, shown_from(25), rounds)
    assert asked == [30, 120] and len(old[1]) == 95  # 5 of the first 30: asked again
    asked.clear()
    recent = nearest_shown(nearest, shown_from(0), rounds)
    assert asked == [30] and len(recent[1]) == 30  # enough at once
    asked.clear()
    nearest_shown(nearest, shown_from(480), rounds)
    assert asked == [30, 120]  # bounded: the oldest 20 are left to full text and the graph
