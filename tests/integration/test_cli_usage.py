"""`apexmem decay-usage`, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]

FACT = {
    "op": "assert",
    "subject": "Alice",
    "subject_type": "person",
    "relation": "uses",
    "object": "Rust",
    "object_type": "language",
}


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
def test_decay_usage_runs_once_per_interval_unless_forced_and_each_pass_is_an_event(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "mem"
    directory.mkdir()
    (directory / "apexmem.toml").write_text('[memory.vectors]\nembedder = "hashing"\n')
    db = str(directory)
    assert _run("--db", db, "ingest", "-", stdin=json.dumps(FACT) + "\n").returncode == 0
    assert _run("--db", db, "recall", "Alice").returncode == 0

    first = _run("--db", db, "--json", "decay-usage")
    early = _run("--db", db, "decay-usage")
    forced = _run("--db", db, "--json", "decay-usage", "--force")
    passes = _run("--db", db, "--json", "log", "--tag", "retrieval-counts-decayed.v1")

    assert first.returncode == 0, first.stderr
    ran = json.loads(first.stdout)
    assert (ran["ran"], ran["factor"], ran["decayed"]) == (True, 0.95, 0)
    assert early.returncode == 0, early.stderr
    assert early.stdout.startswith("not due: the last pass ran at ")
    assert "--force runs one now" in early.stdout
    again = json.loads(forced.stdout)
    assert again["ran"] and again["previous"] is not None
    assert [e["position"] for e in json.loads(passes.stdout)] == [
        ran["position"],
        again["position"],
    ]
