"""`apexmem communities` and `apexmem episodes`, run as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def _knows(a: str, b: str, episode: str) -> str:
    return json.dumps(
        {
            "op": "assert",
            "subject": a,
            "subject_type": "person",
            "relation": "knows",
            "object": b,
            "object_type": "person",
            "episode": episode,
        }
    )


@pytest.mark.slow
def test_communities_are_detected_listed_and_counted_and_episodes_name_their_entities(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "mem"
    directory.mkdir()
    (directory / "apexmem.toml").write_text('[memory.vectors]\nembedder = "hashing"\n')
    db = str(directory)
    lines = [
        _knows("Alice", "Bob", "conv-1"),
        _knows("Bob", "Carol", "conv-2"),
        _knows("Dora", "Emil", "conv-2"),
    ]
    assert _run("--db", db, "ingest", "-", stdin="\n".join(lines) + "\n").returncode == 0

    detected = _run("--db", db, "--json", "communities", "--detect", "--top", "2")
    listed = _run("--db", db, "communities")
    episodes = _run("--db", db, "--json", "episodes", "Bob")
    unknown = _run("--db", db, "episodes", "Nobody")
    stats = _run("--db", db, "--json", "stats")

    assert detected.returncode == 0, detected.stderr
    report = json.loads(detected.stdout)
    assert report["detection"]["formed"] == 2
    assert [(c["name"], c["size"]) for c in report["communities"]] == [
        ("Alice, Bob, Carol [0]", 3),
        ("Dora, Emil [1]", 2),
    ]
    assert [m["name"] for m in report["communities"][0]["top_members"]] == ["Bob", "Alice"]
    assert report["communities"][0]["summary"].startswith("Bob, Alice and Carol (3 entities)")
    assert listed.returncode == 0, listed.stderr
    assert "Dora, Emil [1]" in listed.stdout
    assert [e["conversation"] for e in json.loads(episodes.stdout)] == ["conv-1", "conv-2"]
    assert unknown.returncode == 1
    assert "no entity named 'Nobody'" in unknown.stderr
    assert json.loads(stats.stdout)["graph"]["communities"] == 2
