"""Links between facts through the CLI, as real subprocesses: `export | ingest` carries them,
`diff` lists them, `history` says them in words, and `forget` takes the ones naming an
erased fact."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def _db(root: Path, name: str) -> str:
    directory = root / name
    directory.mkdir()
    (directory / "apexmem.toml").write_text("[memory.vectors]\nenabled = false\n")
    return str(directory)


def _assert(db: str, subject: str, sentence: str) -> str:
    done = _run("--db", db, "--json", "assert", subject, "noted", "--fact", sentence)
    assert done.returncode == 0, done.stderr
    fact_id: str = json.loads(done.stdout)["fact_id"]
    return fact_id


def _link(db: str, source: str, target: str, kind: str, strength: str) -> None:
    done = _run("--db", db, "link", source, target, "--type", kind, "--strength", strength)
    assert done.returncode == 0, done.stderr


def _graph(db: str, fact_id: str) -> tuple[set[tuple[Any, ...]], dict[str, int]]:
    """`fact-graph --json --depth 3`, facts named by their sentences instead of ids."""
    done = _run("--db", db, "--json", "fact-graph", fact_id, "--depth", "3")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    said = {f["fact_id"]: f["fact"] for f in found["facts"]}
    links = {
        (said[k["source"]], said[k["target"]], k["link_type"], k["strength"], k["origin"])
        for k in found["links"]
    }
    return links, {said[f]: hops for f, hops in found["hops"].items()}


def _now() -> str:
    time.sleep(0.01)  # the moments either side of a write are distinct recorded times
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@pytest.mark.slow
def test_links_travel_through_export_and_ingest_and_show_in_diff_and_history(
    tmp_path: Path,
) -> None:
    db, copy = _db(tmp_path, "mem"), _db(tmp_path, "copy")
    pump = _assert(db, "heat pump", "The heat pump lost its Zigbee connection")
    cause = _assert(db, "coordinator", "Coordinator firmware is outdated")
    nibe = _assert(db, "nibe", "The Nibe needs firmware 2.0.4")
    _link(db, pump[:8], cause[:8], "CAUSED_BY", "0.8")
    since = _now()
    _link(db, cause, nibe, "part_of", "0.5")
    until = _now()

    exported = _run("--db", db, "export", "--format", "jsonl")
    ingested = _run("--db", copy, "--json", "ingest", "-", stdin=exported.stdout)
    history = _run("--db", db, "history", "--fact", pump)
    changes = _run("--db", db, "diff", since, until)
    changes_json = _run("--db", db, "--json", "diff", since, until)

    assert exported.returncode == 0, exported.stderr
    ops = [json.loads(line)["op"] for line in exported.stdout.splitlines()]
    assert ops.count("link") == 2
    assert ingested.returncode == 0, ingested.stderr
    assert json.loads(ingested.stdout)["failed"] == []
    for fact_id in (pump, cause, nibe):
        assert _graph(copy, fact_id) == _graph(db, fact_id)
    assert history.returncode == 0, history.stderr
    assert f"linked {pump[:8]}:1 caused_by {cause[:8]}:1 (0.80)" in history.stdout
    assert "source=" not in history.stdout
    assert changes.returncode == 0, changes.stderr
    assert f"linked {cause[:8]}:1 part_of {nibe[:8]}:1 (0.50)" in changes.stdout
    assert "0 asserted" in changes.stdout and "1 linked" in changes.stdout
    [linked] = json.loads(changes_json.stdout)["linked"]
    assert (linked["source"], linked["target"], linked["link_type"]) == (cause, nibe, "part_of")


@pytest.mark.slow
def test_a_bad_link_line_fails_alone_and_forget_takes_the_links_of_an_erased_fact(
    tmp_path: Path,
) -> None:
    db = _db(tmp_path, "mem")
    private = _assert(db, "priya shah", "Priya Shah reported the heat pump fault")
    pump = _assert(db, "heat pump", "The heat pump lost its Zigbee connection")
    good = {"op": "link", "source": pump, "target": private, "link_type": "caused_by"}
    lines = [good, {**good, "link_type": "likes"}, {**good, "target": pump}]

    ingested = _run("--db", db, "ingest", "-", stdin="".join(json.dumps(k) + "\n" for k in lines))
    forgot = _run("--db", db, "forget", "--entity", "priya shah", "--reason", "request")
    after = _graph(db, pump)
    exported = _run("--db", db, "export")

    assert ingested.returncode == 1
    assert "3 lines, 1 applied, 2 failed" in ingested.stdout
    assert "line 2: link_type: 'likes' is not a link type" in ingested.stderr
    assert "line 3: target" in ingested.stderr and "source fact itself" in ingested.stderr
    assert forgot.returncode == 0, forgot.stderr
    assert after == (set(), {"The heat pump lost its Zigbee connection": 0})
    assert '"op":"link"' not in exported.stdout
