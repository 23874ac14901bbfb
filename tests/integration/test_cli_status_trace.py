"""`apexmem status` and `apexmem recall --trace`, as real subprocesses: tables for a
person, JSON with `--json`, and the same hits with or without the trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]
QUESTION = "Where does Alice work?"
STAGES = ["question", "full text", "vector", "seeds", "expansion (bfs)", "fact links"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], capture_output=True, text=True, timeout=180, check=False
    )


def _memory(tmp_path: Path) -> str:
    db = str(tmp_path / "mem")
    (tmp_path / "mem").mkdir()
    (tmp_path / "mem" / "apexmem.toml").write_text(
        '[memory.vectors]\nembedder = "hashing"\n[memory.recall]\nrecord_usage = false\n'
    )
    for obj, relation in (("Acme", "works_at"), ("Paris", "lives_in")):
        made = _run("--db", db, "assert", "Alice", relation, obj, "--subject-type", "person")
        assert made.returncode == 0, made.stderr
    return db


def _json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_recall_trace_prints_a_table_per_stage_and_the_same_hits(tmp_path: Path) -> None:
    db = _memory(tmp_path)

    plain = _json(_run("--db", db, "--json", "recall", QUESTION, "--mode", "bfs"))
    traced = _json(_run("--db", db, "--json", "recall", QUESTION, "--mode", "bfs", "--trace"))
    printed = _run("--db", db, "recall", QUESTION, "--mode", "bfs", "--trace")

    assert plain["trace"] is None
    assert [h["item_id"] for h in traced["hits"]] == [h["item_id"] for h in plain["hits"]]
    stages = [s["stage"] for s in traced["trace"]]
    assert stages[: len(STAGES)] == STAGES
    assert stages[-1] == "fusion"
    fused = traced["trace"][-1]["candidates"]
    assert fused[0]["id"] == plain["hits"][0]["item_id"]
    assert {"id", "score", "label"} <= set(fused[0])
    assert printed.returncode == 0, printed.stderr
    for stage in traced["trace"]:
        assert f"{stage['stage']}: " in printed.stdout
    assert "fact works_at" in printed.stdout


def test_status_prints_counts_lags_settings_and_versions(tmp_path: Path) -> None:
    db = _memory(tmp_path)

    found = _json(_run("--db", db, "--json", "status"))
    printed = _run("--db", db, "status")
    nowhere = _run("--db", str(tmp_path / "none"), "status")

    assert found["counts"]["facts_believed"] == 2
    assert found["counts"]["events"] == found["lags"]["head"]
    assert found["lags"]["graph"] == 0
    assert found["settings"]["backend"] == "sqlite"
    assert found["settings"]["embedder"].startswith("hashing")
    assert set(found["versions"]) == {"apexmem", "readmodel_layout", "python", "database"}
    assert "Alice" not in json.dumps(found)
    assert printed.returncode == 0, printed.stderr
    assert "facts believed" in printed.stdout
    assert "Alice" not in printed.stdout
    assert nowhere.returncode == 2
    assert not (tmp_path / "none").exists()


def test_recall_trace_is_the_same_whatever_the_hash_seed(tmp_path: Path) -> None:
    """The trace lists each stage's candidates in one order in every process: the context
    stage once followed the order of a set, so of the process's hash seed."""
    db = _memory(tmp_path)
    lines = [
        {"op": "message", "episode": "talk", "speaker": speaker, "text": text, "ref": f"t{n}"}
        for n, (speaker, text) in enumerate(
            [
                ("Alice", "I started at Acme last week"),
                ("Bob", "How is Acme treating you?"),
                ("Alice", "Acme is fine, Paris is lovely"),
                ("Bob", "I moved to Paris too"),
                ("Alice", "Then we meet at Acme in Paris"),
            ]
        )
    ]
    (tmp_path / "talk.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingested = _run("--db", db, "ingest", str(tmp_path / "talk.jsonl"))
    assert ingested.returncode == 0, ingested.stderr

    def traced(seed: str) -> Any:
        asked = subprocess.run(
            [*APEXMEM, "--db", db, "--json", "recall", "Acme in Paris", "--trace"],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        # Ids and labels: scores decay with the clock between the processes.
        return [
            (s["stage"], [(c["id"], c["label"]) for c in s["candidates"]], s["total"])
            for s in _json(asked)["trace"]
        ]

    first = traced("1")
    context = [candidates for stage, candidates, _ in first if stage == "context"]
    assert context and len(context[0]) >= 2
    for seed in ("2", "3", "4"):
        assert traced(seed) == first
