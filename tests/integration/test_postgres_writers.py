"""Writer processes racing on one PostgreSQL memory through the whole write path: one new
entity and one single-valued slot, and a writer killed mid-way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from pg_schemas import postgres_schema

from apexmem import Memory
from apexmem.events import EntityObserved, FactAsserted
from apexmem.location import locate

WRITER: Final = Path(__file__).with_name("writer_process.py")
SETTINGS: Final = '[memory.vectors]\nembedder = "hashing"\n'


@pytest.fixture
def place(tmp_path: Path) -> Iterator[str]:
    """A new PostgreSQL memory whose cache (settings: the hashing embedder) is in tmp_path."""
    with postgres_schema("writers") as url:
        cache = locate(url, cache=tmp_path / "cache").directory
        cache.mkdir(parents=True)
        (cache / "apexmem.toml").write_text(SETTINGS, encoding="utf-8")
        _open(url, tmp_path).close()
        yield url


def _open(url: str, tmp_path: Path) -> Memory:
    return Memory.open(locate(url, cache=tmp_path / "cache"))


def _start(url: str, tmp_path: Path, name: str, count: int) -> subprocess.Popen[str]:
    writer = subprocess.Popen(
        [sys.executable, str(WRITER), url, name, str(count), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "APEXMEM_CACHE": str(tmp_path / "cache")},
    )
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "ready", writer.stderr
    return writer


def _acknowledged(output: str) -> list[str]:
    return [word for line in output.splitlines() for word in line.split()[::2]]


@pytest.mark.slow  # eight writer processes through the whole write path
def test_eight_writers_racing_on_one_entity_and_one_slot_lose_and_double_nothing(
    place: str, tmp_path: Path
) -> None:
    writers = [_start(place, tmp_path, f"w{n}", 15) for n in range(8)]
    (tmp_path / "go").touch()

    outputs = [w.communicate(timeout=600) for w in writers]

    assert [w.returncode for w in writers] == [0] * 8, [err[-2000:] for _, err in outputs]
    acknowledged = [fact for out, _ in outputs for fact in _acknowledged(out)]
    with _open(place, tmp_path) as memory:
        asserted = [e.data for e in memory.events(tags=["fact-asserted.v1"])]
        people = [
            e.data
            for e in memory.events(tags=["entity-observed.v1"])
            if isinstance(e.data, EntityObserved) and e.data.canonical_name == "shared person"
        ]
        employers = [
            f
            for f in memory.current_facts()
            if f.subject == "Shared Person" and f.relation == "works_at"
        ]
        report = memory.verify()
        last = memory.log.last_position()
    asserted_ids = [str(e.fact_id) for e in asserted if isinstance(e, FactAsserted)]
    assert len(acknowledged) == 8 * 15 * 2  # each line: a known fact and an employer
    assert set(acknowledged) <= set(asserted_ids)
    assert len(set(asserted_ids)) == len(asserted_ids)
    assert len(people) == 1
    assert len(employers) == 1
    assert report.ok
    assert report.events_checked == last


@pytest.mark.slow  # a writer process started, then killed while it writes
def test_a_writer_killed_on_postgresql_loses_no_acknowledged_fact(
    place: str, tmp_path: Path
) -> None:
    writer = _start(place, tmp_path, "a", 100_000)
    (tmp_path / "go").touch()
    assert writer.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + 120
    while len(seen) < 20 and time.monotonic() < deadline:
        seen.append(writer.stdout.readline())

    os.kill(writer.pid, signal.SIGKILL)
    rest, _ = writer.communicate(timeout=60)

    acknowledged = _acknowledged("".join(seen) + rest)
    with _open(place, tmp_path) as memory:
        missing = [f for f in acknowledged if memory.log.find(f"fact:{f}") is None]
        again = memory.assert_fact(
            subject="Shared Person", subject_type="person", relation="knows",
            object="after the crash", object_type="person",
        )  # fmt: skip
        report = memory.verify()
    assert len(acknowledged) >= 20
    assert missing == []
    assert again.outcome == "created"
    assert report.ok
