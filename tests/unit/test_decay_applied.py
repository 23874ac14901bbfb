"""Confidence decay applied: faded facts leave recall and default queries, stay with
`include_faded=True`, in history and in views of moments when they had not faded; a new
observation brings them back; stats count them."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from clocks import Clock

from apexmem import Memory
from apexmem.cli import cli
from apexmem.domain.embedding import HashingEmbedder

HORIZON = math.log(10) / 0.01
"""Days until a certain fact fades at the default rate (about 230)."""


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def memory(tmp_path: Path, clock: Clock) -> Iterator[Memory]:
    mem = Memory.open(tmp_path / "mem", clock=clock, embedder=HashingEmbedder())
    yield mem
    mem.close()


def uses(subject: str, tool: str, **extra: Any) -> dict[str, Any]:
    return {
        "subject": subject,
        "subject_type": "person",
        "relation": "uses",
        "object": tool,
        "object_type": "tool",
        "fact": f"{subject} uses {tool}",
        **extra,
    }


def recalled(memory: Memory, query: str, **options: Any) -> list[str]:
    return [h.text for h in memory.recall(query, **options) if h.kind == "fact"]


def test_a_faded_fact_leaves_recall_and_comes_back_when_asked_for(
    memory: Memory, clock: Clock
) -> None:
    memory.assert_facts([uses("Alice", "Neovim"), uses("Alice", "Kakoune", confidence=0.05)])

    fresh = recalled(memory, "Alice Neovim Kakoune")
    clock.days(HORIZON + 5)
    faded = recalled(memory, "Alice Neovim Kakoune")
    kept = recalled(memory, "Alice Neovim Kakoune", include_faded=True)

    assert fresh == ["Alice uses Neovim"]  # 0.05 is under 0.1 from the start
    assert faded == []
    assert sorted(kept) == ["Alice uses Kakoune", "Alice uses Neovim"]


def test_default_queries_leave_faded_facts_out_and_history_keeps_them(
    memory: Memory, clock: Clock
) -> None:
    memory.assert_fact(**uses("Alice", "Neovim"))
    memory.assert_fact(**uses("Alice", "Rust", edge_type="causal"))
    memory.set_decay_rate("causal", 0.0)
    clock.days(HORIZON + 5)

    shown = [f.object for f in memory.facts_about("Alice")]
    every = [f.object for f in memory.facts_about("Alice", include_faded=True)]
    walked = {e.name for e in memory.traverse("Alice").entities}
    searched = [h.row.object for h in memory.search_facts("Neovim")]
    history = [f.object for f in memory.edge_history(subject="Alice", relation="uses")]

    assert shown == ["Rust"]  # a causal fact does not decay at rate 0
    assert sorted(o or "" for o in every) == ["Neovim", "Rust"]
    assert walked == {"Alice", "Rust"}
    assert searched == []
    assert sorted(o or "" for o in history) == ["Neovim", "Rust"]
    assert len(memory.history(entity="Alice")) > 0


def test_an_as_of_view_measures_decay_at_its_own_moment(memory: Memory, clock: Clock) -> None:
    memory.assert_fact(**uses("Alice", "Neovim"))
    before = clock.days(HORIZON - 5)
    after = clock.days(10)
    clock.days(100)

    then = [f.object for f in memory.as_of(known_at=before).facts_about("Alice")]
    later = [f.object for f in memory.as_of(known_at=after).facts_about("Alice")]
    recalled_then = recalled(memory, "Alice Neovim", known_at=before)

    assert then == ["Neovim"]
    assert later == []
    assert recalled_then == ["Alice uses Neovim"]


def test_the_rates_known_at_a_moment_decide_that_moment_s_view(
    memory: Memory, clock: Clock
) -> None:
    memory.assert_fact(**uses("Alice", "Neovim"))
    before = clock.days(HORIZON + 5)
    clock.days(1)
    memory.set_decay_rate("semantic", 0.001)

    assert [f.object for f in memory.facts_about("Alice")] == ["Neovim"]
    assert memory.as_of(known_at=before).facts_about("Alice") == []


def test_observing_a_faded_fact_again_brings_it_back_to_recall(
    memory: Memory, clock: Clock
) -> None:
    first = memory.assert_fact(**uses("Alice", "Neovim", confidence=0.9))
    clock.days(HORIZON)
    assert recalled(memory, "Alice Neovim") == []

    again = memory.assert_fact(**uses("Alice", "Neovim", confidence=0.5))

    assert (again.outcome, again.fact_id) == ("reinforced", first.fact_id)
    assert recalled(memory, "Alice Neovim") == ["Alice uses Neovim"]
    assert [f.confidence for f in memory.facts_about("Alice")] == [0.9]


def test_spreading_activation_leaves_faded_edges_out(memory: Memory, clock: Clock) -> None:
    memory.assert_facts([uses("Alice", "Neovim"), uses("Neovim", "Lua")])
    clock.days(HORIZON + 1)
    memory.assert_fact(**uses("Alice", "Helix"))

    found = recalled(memory, "Alice", mode="activation")
    everything = recalled(memory, "Alice", mode="activation", include_faded=True)

    assert found == ["Alice uses Helix"]
    assert set(everything) == {"Alice uses Helix", "Alice uses Neovim", "Neovim uses Lua"}


def test_stats_count_the_faded_facts(memory: Memory, clock: Clock) -> None:
    memory.assert_facts([uses("Alice", "Neovim"), uses("Bob Stone", "Vim", confidence=0.05)])
    clock.days(1)
    memory.assert_fact(**uses("Carol", "Emacs"))

    stats = memory.stats().graph

    assert (stats.current_facts, stats.faded_facts) == (3, 1)


def test_a_replayed_memory_measures_decay_at_the_moment_it_shows(
    memory: Memory, clock: Clock, tmp_path: Path
) -> None:
    memory.assert_fact(**uses("Alice", "Neovim"))
    moment = clock.days(10)
    clock.days(HORIZON * 2)

    with memory.replay(until=moment, into=tmp_path / "past") as past:
        shown = [f.object for f in past.facts_about("Alice")]
    with Memory.open(tmp_path / "past", embedder=HashingEmbedder()) as reopened:
        again = [f.object for f in reopened.facts_about("Alice")]

    assert shown == again == ["Neovim"]
    assert memory.facts_about("Alice") == []


def test_a_replay_to_a_position_measures_decay_at_that_event_s_time(
    memory: Memory, clock: Clock, tmp_path: Path
) -> None:
    memory.assert_fact(**uses("Alice", "Neovim"))
    position = memory.log.last_position()
    clock.days(HORIZON * 2)
    memory.assert_fact(**uses("Bob Stone", "Vim"))

    with memory.replay(until=position, into=tmp_path / "past") as past:
        shown = [f.object for f in past.facts_about("Alice")]

    assert shown == ["Neovim"]


def test_the_cli_shows_faded_facts_only_with_include_faded(tmp_path: Path) -> None:
    db = tmp_path / "mem"
    old = (datetime.now(UTC) - timedelta(days=400)).isoformat()
    with Memory.open(db, embedder=HashingEmbedder()) as mem:
        mem.assert_fact(**uses("Alice", "Neovim", observed_at=old))
    (db / "apexmem.toml").write_text('[memory.vectors]\nembedder = "hashing"\n')
    runner = CliRunner()

    hidden = runner.invoke(cli, ["--db", str(db), "--json", "facts", "Alice"])
    shown = runner.invoke(cli, ["--db", str(db), "--json", "facts", "Alice", "--include-faded"])
    recall = runner.invoke(cli, ["--db", str(db), "--json", "recall", "Alice Neovim"])
    recall_all = runner.invoke(
        cli, ["--db", str(db), "--json", "recall", "Alice Neovim", "--include-faded"]
    )
    walked = runner.invoke(cli, ["--db", str(db), "--json", "traverse", "Alice", "--include-faded"])

    assert hidden.exit_code == shown.exit_code == recall.exit_code == 0, hidden.output
    assert "Neovim" not in hidden.output
    assert "Alice uses Neovim" in shown.output
    assert "Alice uses Neovim" not in recall.output
    assert "Alice uses Neovim" in recall_all.output
    assert "Neovim" in walked.output
