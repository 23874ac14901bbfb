"""The RPE gate on a memory's backfill (`[memory.graph.rpe]`): unsurprising turns are
skipped, never more than max_skip_turns in a row (across runs too), and every skip is a
recorded verdict with its surprise, counted in the report and in stats."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from apexmem import Memory, parse_settings
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events import MessageExtracted
from apexmem.events.errors import ValidationError

GATE = "[memory.graph.rpe]\nenabled = true\nthreshold = 0.3\nmax_skip_turns = 3\n"


def open_memory(path: Path, clock: Callable[[], datetime], text: str = GATE) -> Memory:
    settings, _ = parse_settings(text)
    return Memory.open(path, settings=settings, clock=clock, embedder=HashingEmbedder())


def say(memory: Memory, *texts: str, episode: str = "conv-1") -> None:
    for text in texts:
        memory.record_message(episode=episode, speaker="Priya", text=text)


def verdicts(memory: Memory) -> list[MessageExtracted]:
    return [
        e.data
        for e in memory.events(tags=["message-extracted.v1"])
        if isinstance(e.data, MessageExtracted)
    ]


def pattern(memory: Memory) -> str:
    """Each verdict in order: E extracted, s skipped by the gate."""
    return "".join("s" if v.surprise is not None else "E" for v in verdicts(memory))


def test_unsurprising_turns_are_skipped_but_never_more_than_max_skip_turns_in_a_row(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    with open_memory(tmp_path / "mem", clock) as memory:
        say(memory, *["ok, sounds good to me"] * 9)

        report = memory.backfill()

        assert pattern(memory) == "EsssEsssE"
        assert (report.messages, report.gated, report.pending) == (9, 6, 0)
        skipped = [v.surprise for v in verdicts(memory) if v.surprise is not None]
        assert all(s is not None and s < 0.3 for s in skipped)
        assert memory.stats().graph.gated_messages == 6


def test_a_turn_on_a_new_topic_with_new_names_is_extracted(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    with open_memory(tmp_path / "mem", clock) as memory:
        say(
            memory,
            "ok, sounds good to me",
            "ok, sounds good to me",
            "My manager Tom Baker wants us to migrate to Snowflake next quarter",
        )

        memory.backfill()

        assert pattern(memory) == "EsE"
        assert memory.facts_about("Tom Baker")


def test_skips_in_a_row_are_counted_across_backfill_runs(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    with open_memory(tmp_path / "mem", clock) as memory:
        say(memory, *["ok, sounds good to me"] * 9)

        runs = [memory.backfill(limit=2).gated for _ in range(5)]

        assert pattern(memory) == "EsssEsssE"
        assert sum(runs) == 6


def test_each_conversation_has_its_own_count(tmp_path: Path, clock: Callable[[], datetime]) -> None:
    with open_memory(tmp_path / "mem", clock) as memory:
        for _ in range(3):
            say(memory, "ok, sounds good to me", episode="conv-1")
            say(memory, "fine, see you then", episode="conv-2")

        memory.backfill()

        assert pattern(memory) == "EEssss"


def test_without_the_gate_every_turn_is_read(tmp_path: Path, clock: Callable[[], datetime]) -> None:
    with open_memory(tmp_path / "mem", clock, text="") as memory:
        say(memory, *["ok, sounds good to me"] * 4)

        report = memory.backfill()

        assert pattern(memory) == "EEEE" and report.gated == 0


def test_skips_are_kept_by_rebuild_without_judging_again(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    with open_memory(tmp_path / "mem", clock) as memory:
        say(memory, *["ok, sounds good to me"] * 5)
        memory.backfill()

        memory.rebuild()

        assert memory.stats().graph.gated_messages == 3
        assert memory.backfill().messages == 0


def test_the_gate_needs_embeddings() -> None:
    with pytest.raises(ValidationError, match=r"memory\.graph\.rpe\.enabled"):
        parse_settings(GATE + "[memory.vectors]\nenabled = false\n")
