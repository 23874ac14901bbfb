"""Which `apexmem` commands may create a memory, run as real subprocesses: reading commands
refuse a directory without one and create nothing, writing commands and `init` create it,
and the demo only ever writes to a new directory."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]

GOOD = {
    "op": "assert",
    "subject": "Alice",
    "subject_type": "person",
    "relation": "works_at",
    "object": "Acme",
    "object_type": "organization",
    "valid_from": "2024-01-01T00:00:00Z",
}


def _run(*args: str, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250", "APEXMEM_HOME": str(home), "HOME": str(home.parent)}
    return subprocess.run(
        [*APEXMEM, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def _fingerprint(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


READS = [
    pytest.param(["stats"], id="stats"),
    pytest.param(["facts", "Alice"], id="facts"),
    pytest.param(["recall", "where does Alice work?"], id="recall"),
    pytest.param(["verify"], id="verify"),
    pytest.param(["log"], id="log"),
    pytest.param(["history", "--entity", "Alice"], id="history"),
]


@pytest.mark.parametrize("command", READS)
def test_a_read_command_with_no_memory_at_db_says_so_and_creates_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    home = tmp_path / "home"
    mistyped = tmp_path / "mem-typo"

    result = _run("--db", str(mistyped), *command, home=home)

    assert result.returncode == 2
    assert result.stderr.startswith(f"error: no memory in {mistyped} ")
    assert "apexmem --db" in result.stderr and "init" in result.stderr
    assert "Traceback" not in result.stderr
    assert not mistyped.exists()
    assert not home.exists()


@pytest.mark.parametrize("command", READS)
def test_a_read_command_with_no_memory_at_apexmem_home_says_so_and_creates_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    home = tmp_path / "home"

    result = _run(*command, home=home)

    assert result.returncode == 2
    assert result.stderr.startswith(f"error: no memory in {home} ")
    assert not home.exists()


def test_a_directory_with_only_a_settings_file_holds_no_memory_and_stays_as_it_was(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "apexmem.toml").write_text("[memory]\n", encoding="utf-8")

    result = _run("stats", home=home)

    assert result.returncode == 2
    assert "no memory in" in result.stderr
    assert sorted(p.name for p in home.iterdir()) == ["apexmem.toml"]


def test_init_and_ingest_still_create_the_memory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    made_by_init = tmp_path / "by-init"
    made_by_ingest = tmp_path / "by-ingest"

    init = _run("--db", str(made_by_init), "init", home=home)
    ingest = _run("--db", str(made_by_ingest), "ingest", "-", home=home, stdin=json.dumps(GOOD))
    from_home = _run("ingest", "-", home=home, stdin=json.dumps(GOOD))
    stats = _run("--db", str(made_by_ingest), "--json", "stats", home=home)

    assert init.returncode == 0, init.stderr
    assert (made_by_init / "events.db").is_file()
    assert ingest.returncode == 0, ingest.stderr
    assert from_home.returncode == 0, from_home.stderr
    assert (home / "events.db").is_file()
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["events"] >= 1


def test_the_demo_leaves_the_memory_at_apexmem_home_byte_for_byte_unchanged(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    assert _run("ingest", "-", home=home, stdin=json.dumps(GOOD)).returncode == 0
    before = _fingerprint(home)

    result = _run("demo", home=home)

    assert result.returncode == 0, result.stderr
    assert "verify: ok=True" in result.stdout
    assert _fingerprint(home) == before


def test_the_demo_refuses_a_db_that_is_not_empty_and_writes_to_a_new_or_empty_one(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    taken = tmp_path / "taken"
    assert _run("--db", str(taken), "init", home=home).returncode == 0
    before = _fingerprint(taken)
    empty = tmp_path / "empty"
    empty.mkdir()

    refused = _run("--db", str(taken), "demo", home=home)
    into_empty = _run("demo", "--db", str(empty), home=home)

    assert refused.returncode == 2
    assert refused.stderr.startswith(f"error: --db: '{taken}' is not empty")
    assert _fingerprint(taken) == before
    assert into_empty.returncode == 0, into_empty.stderr
    assert (empty / "events.db").is_file()
    assert not home.exists()
