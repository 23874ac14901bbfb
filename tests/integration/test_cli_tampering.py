"""What `apexmem verify` finds beside the chain, and checking against a kept head, run as a
real subprocess on a memory edited with sqlite3 as access to the file could."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from apexmem import Memory
from apexmem.domain.commands import AssertFact
from apexmem.domain.embedding import HashingEmbedder

pytestmark = pytest.mark.slow  # each test runs apexmem 3 to 7 times, ~2 s of start-up each
APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]
NO_VECTORS = "[memory.vectors]\nenabled = false\n"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], capture_output=True, text=True, timeout=120, check=False
    )


def _fact(subject: str, employer: str) -> AssertFact:
    return AssertFact(
        subject=subject,
        subject_type="person",
        relation="works_at",
        object=employer,
        object_type="organization",
    )


def _memory(directory: Path, clock: Callable[[], datetime]) -> None:
    """Three appends: the first without a key, then one under key k1, one under k2."""
    directory.mkdir()
    (directory / "apexmem.toml").write_text(NO_VECTORS, encoding="utf-8")
    with Memory.open(directory, clock=clock, embedder=HashingEmbedder()) as memory:
        memory.execute([_fact("Alice", "Acme")])
        memory.execute([_fact("Bob", "Globex")], idempotency_key="k1")
        memory.execute([_fact("Carol", "Initech")], idempotency_key="k2")


def _keys(directory: Path) -> dict[str, tuple[int, int, int]]:
    with sqlite3.connect(directory / "events.db") as db:
        rows = db.execute("SELECT key, first_position, last_position, recorded_at FROM idempotency")
        return {key: (first, last, at) for key, first, last, at in rows}


def _edit(directory: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(directory / "events.db") as db:
        db.execute(sql, params)
    db.close()


def _verified(directory: Path, *options: str) -> tuple[int, dict[str, object]]:
    result = _run("--db", str(directory), "--json", "verify", *options)
    return result.returncode, json.loads(result.stdout)


def test_an_edited_time_index_fails_verify_at_its_position(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    mem = tmp_path / "mem"
    _memory(mem, clock)
    first, last, _ = _keys(mem)["k2"]

    _edit(mem, "UPDATE log_index SET recorded_at = recorded_at + 1 WHERE position = ?", last)
    status, report = _verified(mem)

    assert status == 1
    assert report["first_bad_position"] == first
    assert "log_index.recorded_at" in str(report["reason"])


def test_a_key_pointing_at_another_keys_append_fails_verify(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    mem = tmp_path / "mem"
    _memory(mem, clock)
    first, last, at = _keys(mem)["k1"]

    _edit(mem, "INSERT INTO idempotency VALUES ('forged', ?, ?, ?, NULL)", first, last, at)
    status, report = _verified(mem)

    assert status == 1
    assert report["first_bad_position"] == first
    assert "'forged'" in str(report["reason"])


def test_verify_expect_fails_unless_the_chain_holds_the_kept_head(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    mem = tmp_path / "mem"
    _memory(mem, clock)
    kept = json.loads(_run("--db", str(mem), "--json", "head").stdout)
    with Memory.open(mem, clock=clock, embedder=HashingEmbedder()) as memory:
        memory.execute([_fact("Dave", "Hooli")])
        assert memory.verify(expect=memory.head().chain).ok

    at_kept = _verified(mem, "--expect", f"{kept['position']}:{kept['chain']}")
    stale = _verified(mem, "--expect", kept["chain"])
    bad = _run("--db", str(mem), "verify", "--expect", "not-a-head")

    assert at_kept[0] == 0 and at_kept[1]["ok"] is True
    assert stale[0] == 1 and stale[1]["ok"] is False
    assert kept["chain"] in str(stale[1]["reason"])
    assert bad.returncode == 2 and "expect" in bad.stderr
