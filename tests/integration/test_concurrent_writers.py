"""Real processes racing on one memory: nothing acknowledged is lost, nothing applied twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import select

from apexmem import Memory
from apexmem.events import EntityObserved, FactAsserted
from apexmem.readmodels.store import dump
from apexmem.readmodels.vectors import vector_items

WRITER = Path(__file__).with_name("writer_process.py")


def _start(directory: Path, name: str, count: int) -> subprocess.Popen[str]:
    writer = subprocess.Popen(
        [sys.executable, str(WRITER), str(directory), name, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "ready"
    return writer


def _acknowledged(output: str) -> list[str]:
    return [word for line in output.splitlines() for word in line.split()[::2]]


def test_two_processes_appending_about_one_new_entity_lose_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "mem"
    Memory.open(directory).close()
    writers = [_start(directory, name, 300) for name in ("a", "b")]
    (directory / "go").touch()

    outputs = [w.communicate(timeout=120) for w in writers]

    assert [w.returncode for w in writers] == [0, 0], [err for _, err in outputs]
    acknowledged = [fact for out, _ in outputs for fact in _acknowledged(out)]
    with Memory.open(directory) as memory:
        asserted = [e.data for e in memory.events(tags=["fact-asserted.v1"])]
        people = [
            e.data
            for e in memory.events(tags=["entity-observed.v1"])
            if isinstance(e.data, EntityObserved) and e.data.canonical_name == "shared person"
        ]
        current_employers = [
            f
            for f in memory.current_facts()
            if f.subject == "Shared Person" and f.relation == "works_at"
        ]
        report = memory.verify()
        last = memory.log.last_position()
        incremental = _read_models(memory)  # each write projected inline, the two racing
        memory.rebuild()
        rebuilt = _read_models(memory)
    assert rebuilt == incremental  # every event applied once, to the graph and the vectors
    asserted_ids = {str(e.fact_id) for e in asserted if isinstance(e, FactAsserted)}
    assert set(acknowledged) <= asserted_ids
    assert len(asserted_ids) == len(asserted)
    assert len(people) == 1
    assert len(current_employers) == 1
    assert report.ok
    assert report.events_checked == last


def _read_models(memory: Memory) -> dict[str, list[tuple[object, ...]]]:
    with memory.store.read() as connection:
        models = dump(connection)
        items = connection.execute(select(vector_items).order_by(vector_items.c.vid))
        models["vector_items"] = [tuple(row) for row in items]
    return models


def test_a_killed_writer_loses_no_acknowledged_fact(tmp_path: Path) -> None:
    directory = tmp_path / "mem"
    Memory.open(directory).close()
    writer = _start(directory, "a", 100_000)
    (directory / "go").touch()
    assert writer.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while len(seen) < 30 and time.monotonic() < deadline:
        seen.append(writer.stdout.readline())

    os.kill(writer.pid, signal.SIGKILL)
    rest, _ = writer.communicate(timeout=30)

    acknowledged = _acknowledged("".join(seen) + rest)
    with Memory.open(directory) as memory:
        report = memory.verify()
        missing = [f for f in acknowledged if memory.log.find(f"fact:{f}") is None]
        again = memory.assert_fact(
            subject="Shared Person",
            subject_type="person",
            relation="knows",
            object="after the crash",
        )
    assert len(acknowledged) >= 30
    assert missing == []
    assert report.ok
    assert again.outcome == "created"
