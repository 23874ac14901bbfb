"""The `apexmem` command line on a full disk (a real small tmpfs), run as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from small_disk import fill, small_disk

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]
SETTINGS = '[memory.vectors]\nembedder = "hashing"\n'


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def _facts(first: int, last: int) -> str:
    return "".join(
        json.dumps(
            {
                "op": "assert",
                "subject": f"Person{n}",
                "subject_type": "person",
                "relation": "works_at",
                "object": f"Company{n}",
                "object_type": "organization",
            }
        )
        + "\n"
        for n in range(first, last)
    )


class Full(NamedTuple):
    """A memory on a disk with no byte left, and how many events its log held then."""

    directory: Path
    events: int


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Full]:
    """A memory of 20 facts, written by the CLI, on a tmpfs with no byte left (shared: no
    test here can write to it)."""
    with small_disk(tmp_path_factory.mktemp("full") / "disk") as disk:
        directory = disk / "mem"
        directory.mkdir()
        (directory / "apexmem.toml").write_text(SETTINGS)
        written = _run("--db", str(directory), "ingest", "-", stdin=_facts(0, 20))
        assert written.returncode == 0, written.stderr
        stats = json.loads(_run("--db", str(directory), "--json", "stats").stdout)
        fill(disk)
        yield Full(directory, stats["events"])


# Each command is a process of its own (~2 s of CPU to start), hence one test for them all.
@pytest.mark.slow
def test_read_commands_answer_on_a_full_disk(full: Full) -> None:
    commands = {
        "verify": ["verify"],
        "stats": ["--json", "stats"],
        "recall": ["--json", "recall", "Where does Person3 work?"],
        "history": ["--json", "history", "--entity", "Person3"],
        "facts": ["--json", "facts", "Person3"],
    }

    results = {name: _run("--db", str(full.directory), *args) for name, args in commands.items()}

    assert {name: r.returncode for name, r in results.items()} == dict.fromkeys(commands, 0)
    assert not [name for name, r in results.items() if "Traceback" in r.stderr]
    assert "chain ok" in results["verify"].stdout
    assert json.loads(results["stats"].stdout)["events"] == full.events
    for name in ("recall", "history", "facts"):
        assert "Company3" in results[name].stdout, name


@pytest.mark.slow
def test_a_write_on_a_full_disk_fails_with_one_line_naming_the_disk_and_writes_nothing(
    full: Full,
) -> None:
    result = _run("--db", str(full.directory), "ingest", "-", stdin=_facts(20, 40))
    after = json.loads(_run("--db", str(full.directory), "--json", "stats").stdout)
    verified = _run("--db", str(full.directory), "verify")

    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: stopped at line 1, not applied: ")
    assert f"the disk holding {full.directory} is full" in result.stderr
    assert (after["events"], after["projection_lag"]) == (full.events, 0)
    assert verified.returncode == 0


@pytest.mark.slow
def test_init_and_replay_on_a_full_disk_fail_with_one_line_naming_it(full: Full) -> None:
    other = full.directory.parent / "other"
    then = full.directory.parent / "then"

    init = _run("--db", str(other), "init")
    replay = _run("--db", str(full.directory), "replay", "--until", "5", "--into", str(then))

    for result in (init, replay):
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith("error: the disk holding ")
        assert " is full (" in result.stderr
