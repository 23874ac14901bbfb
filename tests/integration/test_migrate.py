"""`apexmem migrate`: a memory goes to PostgreSQL and comes home with the same log, the same
answers and the same idempotency keys; a damaged log or an occupied target is refused."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

import pytest
from pg_schemas import postgres_schema

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.location import locate

APEXMEM: Final = [sys.executable, "-c", "from apexmem.cli import main; main()"]
SETTINGS: Final = "[memory.vectors]\nenabled = false\n"
START: Final = datetime(2024, 1, 1, tzinfo=UTC)


def _run(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "APEXMEM_CACHE": str(cache)}
    return subprocess.run(
        [*APEXMEM, *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A SQLite memory with a supersession, a late correction and an idempotent write."""
    directory = tmp_path / "home"
    directory.mkdir()
    (directory / "apexmem.toml").write_text(SETTINGS, encoding="utf-8")
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        for year, org in ((2018, "Acme"), (2021, "Globex")):
            memory.assert_fact(
                subject="Alice", subject_type="person", relation="works_at", object=org,
                object_type="organization", valid_from=START.replace(year=year),
            )  # fmt: skip
        memory.assert_fact(
            subject="Bob", subject_type="person", relation="uses", object="Rust",
            object_type="tool", idempotency_key="bob-rust-1",
        )  # fmt: skip
    return directory


def _answers(memory: Memory) -> tuple[object, ...]:
    alice = [(f.object, f.valid_from, f.valid_until) for f in memory.facts_about("Alice")]
    then = memory.as_of(valid_at=START.replace(year=2019)).facts_about("Alice")
    history = [(h.position, h.recorded_at) for h in memory.history(entity="Alice")]
    return alice, [f.object for f in then], history, memory.log.last_position()


@pytest.mark.slow  # four CLI processes: migrate there and back, each projecting
def test_a_memory_goes_to_postgresql_and_back_with_the_same_log_and_answers(
    source: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    with Memory.open(source, embedder=HashingEmbedder()) as memory:
        before = _answers(memory)
        head = memory.verify().head
    with postgres_schema("migrate") as url:
        there = _run("migrate", "--from", str(source), "--to", url, cache=cache)
        assert there.returncode == 0, there.stderr
        away = Memory.open(locate(url, cache=cache), create=False, embedder=HashingEmbedder())
        with away:
            assert _answers(away) == before
            assert away.verify().head == head
            again = away.assert_fact(
                subject="Bob", subject_type="person", relation="uses", object="Rust",
                object_type="tool", idempotency_key="bob-rust-1",
            )  # fmt: skip
            assert away.log.last_position() == before[-1]  # the retry was recognized
            assert again.outcome in {"created", "reinforced"}
        back = tmp_path / "back"
        home = _run("migrate", "--from", url, "--to", str(back), cache=cache)
        assert home.returncode == 0, home.stderr
    with Memory.open(back, create=False, embedder=HashingEmbedder()) as returned:
        assert _answers(returned) == before
        assert returned.verify().head == head


def test_a_target_that_holds_anything_is_refused_and_left_as_it_was(
    source: Path, tmp_path: Path
) -> None:
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine", encoding="utf-8")
    done = _run("migrate", "--from", str(source), "--to", str(occupied), cache=tmp_path)
    assert done.returncode == 2
    assert "is not empty" in done.stderr
    assert sorted(p.name for p in occupied.iterdir()) == ["notes.txt"]


def test_a_log_that_does_not_verify_is_not_copied(source: Path, tmp_path: Path) -> None:
    with sqlite3.connect(source / "events.db") as db:
        [(state,)] = db.execute("SELECT state FROM stored_events WHERE rowid = 2")
        db.execute(
            "UPDATE stored_events SET state = ? WHERE rowid = 2",
            (state[:-1] + bytes([state[-1] ^ 1]),),
        )
    target = tmp_path / "copy"
    done = _run("migrate", "--from", str(source), "--to", str(target), cache=tmp_path)
    assert done.returncode != 0
    assert "does not verify" in done.stderr
    assert not (target / "events.db").exists() or not Memory.open(target).log.last_position()


def test_within_one_backend_a_copy_answers_alike_and_ends_in_the_same_head(
    source: Path, tmp_path: Path
) -> None:
    target = tmp_path / "copy"
    done = _run("--json", "migrate", "--from", str(source), "--to", str(target), cache=tmp_path)
    assert done.returncode == 0, done.stderr
    with (
        Memory.open(source, embedder=HashingEmbedder()) as original,
        Memory.open(target, create=False, embedder=HashingEmbedder()) as copy,
    ):
        assert _answers(copy) == _answers(original)
        assert copy.verify().head == original.verify().head
        assert copy.log.position_at(START + timedelta(days=1)) == 0
