"""`apexmem link` and `apexmem fact-graph`, run as real subprocesses: short ids, exit codes,
the graph both ways, and recall bringing a linked fact with the link in its why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], capture_output=True, text=True, timeout=120, check=False
    )


def _assert(db: str, subject: str, sentence: str) -> str:
    done = _run("--db", db, "--json", "assert", subject, "noted", "--fact", sentence)
    assert done.returncode == 0, done.stderr
    fact_id: str = json.loads(done.stdout)["fact_id"]
    return fact_id


@pytest.fixture
def db(tmp_path: Path) -> str:
    directory = tmp_path / "mem"
    directory.mkdir()
    (directory / "apexmem.toml").write_text("[memory.vectors]\nenabled = false\n")
    return str(directory)


@pytest.mark.slow
def test_a_link_made_with_short_ids_shows_in_the_graph_recall_and_history(db: str) -> None:
    pump = _assert(db, "heat pump", "The heat pump lost its Zigbee connection")
    cause = _assert(db, "coordinator", "Coordinator firmware is outdated")

    made = _run("--db", db, "link", pump[:8] + ":1", cause[:8], "--type", "CAUSED_BY",
                "--strength", "0.8")  # fmt: skip
    graph = _run("--db", db, "--json", "fact-graph", cause[:8], "--depth", "2")
    shown = _run("--db", db, "fact-graph", cause[:8])
    recalled = _run("--db", db, "--json", "recall", "why did the heat pump disconnect")
    history = _run("--db", db, "--json", "history", "--fact", cause)

    assert made.returncode == 0, made.stderr
    assert "CAUSED_BY link from" in made.stdout and "strength 0.80" in made.stdout
    found = json.loads(graph.stdout)
    [direct] = found["direct"]
    assert (direct["direction"], direct["link_type"], direct["strength"]) == (
        "in",
        "caused_by",
        0.8,
    )
    assert [f["fact_id"] for f in found["facts"]] == [cause, pump]
    assert "<- [CAUSED_BY]" in shown.stdout
    assert "The heat pump lost its Zigbee connection" in shown.stdout
    hits = {h["item_id"]: h for h in json.loads(recalled.stdout)["hits"]}
    assert any(w.startswith("fact link:") and "caused_by" in w for w in hits[cause]["why"])
    assert "fact-linked.v1" in [e["tag"] for e in json.loads(history.stdout)]


@pytest.mark.slow
def test_bad_links_exit_2_unknown_facts_exit_1_and_nothing_is_written(db: str) -> None:
    pump = _assert(db, "heat pump", "The heat pump lost its Zigbee connection")
    cause = _assert(db, "coordinator", "Coordinator firmware is outdated")

    bad_type = _run("--db", db, "link", pump, cause, "--type", "likes")
    bad_strength = _run("--db", db, "link", pump, cause, "--type", "part_of", "--strength", "0")
    itself = _run("--db", db, "link", pump, pump, "--type", "part_of")
    unknown = _run("--db", db, "link", pump, "ffffffff", "--type", "part_of")
    too_deep = _run("--db", db, "fact-graph", pump, "--depth", "4")
    graph = _run("--db", db, "--json", "fact-graph", pump, "--depth", "3")

    assert (bad_type.returncode, bad_strength.returncode, itself.returncode) == (2, 2, 2)
    assert "--type: 'likes' is not a link type" in bad_type.stderr
    assert "--strength: 0.0 is not a number above 0" in bad_strength.stderr
    assert "TARGET" in itself.stderr and "source fact itself" in itself.stderr
    assert unknown.returncode == 1 and "TARGET" in unknown.stderr
    assert too_deep.returncode == 2
    assert json.loads(graph.stdout)["links"] == []
