"""Read models follow the log they stand beside: a log restored from an older copy, or
emptied, is projected again on open. The command line, as a real subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from apexmem.events import EventLog

pytestmark = pytest.mark.slow  # each test runs apexmem 3 to 7 times, ~2 s of start-up each
APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]
NO_VECTORS = "[memory.vectors]\nenabled = false\n"


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def _ingest(directory: Path, subject: str, employer: str) -> None:
    line = {
        "op": "assert",
        "subject": subject,
        "subject_type": "person",
        "relation": "works_at",
        "object": employer,
        "object_type": "organization",
    }
    done = _run("--db", str(directory), "ingest", "-", stdin=json.dumps(line) + "\n")
    assert done.returncode == 0, done.stderr


def _put_log(source: Path, directory: Path) -> None:
    """`source` as the memory's events.db (the closed log's WAL files are gone with it)."""
    for suffix in ("-wal", "-shm"):
        Path(f"{directory / 'events.db'}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(source, directory / "events.db")


def _stats(directory: Path) -> dict[str, object]:
    done = _run("--db", str(directory), "--json", "stats")
    assert done.returncode == 0, done.stderr
    stats: dict[str, object] = json.loads(done.stdout)
    return stats


def _knows(directory: Path, name: str) -> bool:
    return _run("--db", str(directory), "facts", name).returncode == 0


def test_a_log_restored_from_an_older_copy_is_projected_again(tmp_path: Path) -> None:
    mem, kept = tmp_path / "mem", tmp_path / "events-copy.db"
    mem.mkdir()
    (mem / "apexmem.toml").write_text(NO_VECTORS, encoding="utf-8")
    _ingest(mem, "Alice", "Acme")
    shutil.copyfile(mem / "events.db", kept)
    copied_at = _stats(mem)["last_position"]
    _ingest(mem, "Bob", "Globex")

    _put_log(kept, mem)
    restored = _stats(mem)
    _ingest(mem, "Carol", "Initech")

    assert restored["last_position"] == copied_at
    assert restored["projection_lag"] == 0
    assert not _knows(mem, "Bob")  # only what the log holds
    assert _knows(mem, "Carol")  # new writes appear
    assert _knows(mem, "Alice")


def test_an_emptied_log_is_projected_again(tmp_path: Path) -> None:
    mem, empty = tmp_path / "mem", tmp_path / "empty.db"
    mem.mkdir()
    (mem / "apexmem.toml").write_text(NO_VECTORS, encoding="utf-8")
    _ingest(mem, "Alice", "Acme")
    EventLog(empty).close()

    _put_log(empty, mem)
    emptied = _stats(mem)
    _ingest(mem, "Dave", "Hooli")

    assert emptied["last_position"] == 0
    graph = emptied["graph"]
    assert isinstance(graph, dict) and graph["entities"] == 0
    assert not _knows(mem, "Alice")
    assert _knows(mem, "Dave")
