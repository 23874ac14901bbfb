"""`apexmem decay`, run as a real subprocess: a pass records the facts that faded, history
and diff show them, a pass with nothing new writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]


def _fact(thing: str, observed_at: str | None) -> str:
    fact = {
        "op": "assert",
        "subject": "Alice",
        "subject_type": "person",
        "relation": "likes",
        "object": thing,
        "confidence": 0.5,
    }
    if observed_at is not None:
        fact["observed_at"] = observed_at
    return json.dumps(fact)


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
def test_decay_records_a_fade_that_history_and_diff_show(tmp_path: Path) -> None:
    directory = tmp_path / "mem"
    directory.mkdir()
    (directory / "apexmem.toml").write_text('[memory.vectors]\nembedder = "hashing"\n')
    db = str(directory)
    lines = [_fact("tea", "2020-01-01T00:00:00Z"), _fact("coffee", None)]
    ingested = _run("--db", db, "ingest", "-", stdin="\n".join(lines) + "\n")
    assert ingested.returncode == 0, ingested.stderr

    said = _run("--db", db, "decay")
    again = _run("--db", db, "--json", "decay")
    history = _run("--db", db, "--json", "history", "--entity", "tea")
    changes = _run("--db", db, "--json", "diff", "2020-01-01T00:00:00Z", "2999-01-01T00:00:00Z")

    assert said.returncode == 0, said.stderr
    assert ": 1 faded, 0 restored" in said.stdout
    assert "faded" in said.stdout and "Alice likes tea" in said.stdout
    assert "decayed, 0.01/day" in said.stdout
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["position"] == 0
    [fade] = [e for e in json.loads(history.stdout) if e["tag"] == "facts-faded.v1"]
    [named] = fade["data"]["faded"]
    assert (named["reason"], named["rate"]) == ("decayed", 0.01)
    assert changes.returncode == 0, changes.stderr
    [faded] = json.loads(changes.stdout)["faded"]
    assert (faded["kind"], faded["fact"], faded["fact_id"]) == (
        "faded",
        "Alice likes tea",
        named["fact_id"],
    )
