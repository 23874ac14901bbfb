"""A full disk, on a real small tmpfs: committed writes stay committed, errors name the disk,
and reads need no space."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, MutableMapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import structlog
from litestar.testing import TestClient
from small_disk import fill, small_disk
from structlog.testing import capture_logs

from apexmem import DiskFullError, FactRef, HashingEmbedder, Memory
from apexmem.events.diskfull import RECHECK_SECS
from apexmem.server.app import create_app
from apexmem.server.tenants import Tenants
from apexmem.service import pipeline

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs, mounted for the test."""
    with small_disk(tmp_path / "disk") as mounted:
        yield mounted


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[MutableMapping[str, Any]]]:
    """What the write pipeline logs (its logger was bound at import, to stderr)."""
    with capture_logs() as entries:
        monkeypatch.setattr(pipeline, "_logger", structlog.get_logger())
        yield entries


def _open(directory: Path, clock: Callable[[], datetime], *, settings: str = "") -> Memory:
    directory.mkdir(exist_ok=True)
    if settings:
        (directory / "apexmem.toml").write_text(settings)
    return Memory.open(directory, clock=clock, embedder=HashingEmbedder())


def _bob(memory: Memory, idempotency_key: str | None = None) -> FactRef:
    return memory.assert_fact(
        subject="Bob",
        subject_type="person",
        relation="works_at",
        object="Globex",
        object_type="organization",
        idempotency_key=idempotency_key,
    )


def _carol(memory: Memory) -> FactRef:
    return memory.assert_fact(subject="Carol", relation="likes", object="tea")


def _alice(memory: Memory) -> None:
    memory.assert_fact(
        subject="Alice",
        subject_type="person",
        relation="works_at",
        object="Acme",
        object_type="organization",
    )


def test_a_write_committed_before_projecting_it_found_the_disk_full_is_answered_as_committed(
    tmp_path: Path,
    disk: Path,
    clock: Callable[[], datetime],
    logged: list[MutableMapping[str, Any]],
) -> None:
    directory = tmp_path / "mem"
    directory.mkdir()
    # The read models on the small disk, the log beside it: only the projection finds it full.
    (directory / "readmodels.db").symlink_to(disk / "readmodels.db")
    with _open(directory, clock) as memory:
        _alice(memory)
        filler = fill(disk)

        told = _bob(memory, "bob-1")
        after_first = memory.log.count()
        again = _bob(memory, "bob-1")
        after_retry = memory.log.count()
        behind = memory.projections.lag()
        filler.unlink()
        facts = memory.facts_about("Bob")
        tags = [e.tag for e in memory.events()]

    assert told.outcome == "created"
    assert again == told
    assert after_retry == after_first
    assert "fact-reinforced.v1" not in tags
    assert behind > 0
    failed = [e for e in logged if e["event"] == "projection.failed"]
    assert len(failed) == 2
    assert f"the disk holding {disk} is full" in failed[0]["error"]
    assert [(f.subject, f.object) for f in facts] == [("Bob", "Globex")]


def test_with_inline_projection_off_a_full_disk_refuses_a_write_with_an_error_naming_it(
    disk: Path, clock: Callable[[], datetime]
) -> None:
    directory = disk / "mem"
    with _open(directory, clock, settings="[memory.projection]\ninline = false\n") as memory:
        _alice(memory)
        before = memory.log.count()
        filler = fill(disk)

        with pytest.raises(DiskFullError) as refused:
            _bob(memory)
        with pytest.raises(DiskFullError) as unprojected:
            memory.project()
        after = memory.log.count()
        filler.unlink()
        written = _bob(memory)

    assert str(refused.value).startswith(f"the disk holding {directory} is full (SQLite: ")
    assert f"the disk holding {directory} is full" in str(unprojected.value)
    assert isinstance(refused.value.__cause__, sqlite3.Error)
    assert after == before
    assert written.outcome == "created"


def test_a_memory_opened_on_a_full_disk_answers_reads_and_refuses_writes(
    disk: Path, clock: Callable[[], datetime]
) -> None:
    directory = disk / "mem"
    with _open(directory, clock) as memory:
        _alice(memory)
        _bob(memory)
    fill(disk)

    with Memory.open(directory, create=False, clock=clock, embedder=HashingEmbedder()) as memory:
        report = memory.verify()
        stats = memory.stats()
        facts = memory.facts_about("Bob")
        history = memory.history(entity="Alice", entity_type="person")
        recalled = memory.recall("Where does Bob work?")
        with pytest.raises(DiskFullError, match=f"the disk holding {directory} is full"):
            _carol(memory)

    assert report.ok
    assert report.events_checked == stats.events > 0
    assert stats.projection_lag == 0
    assert [f.object for f in facts] == ["Globex"]
    assert history
    assert any(h.kind == "fact" for h in recalled)


def test_a_memory_opened_on_a_full_disk_takes_writes_once_space_is_freed(
    disk: Path, clock: Callable[[], datetime]
) -> None:
    directory = disk / "mem"
    with _open(directory, clock) as memory:
        _alice(memory)
    filler = fill(disk)

    with Memory.open(directory, create=False, clock=clock, embedder=HashingEmbedder()) as memory:
        with pytest.raises(DiskFullError):
            _carol(memory)
        filler.unlink()
        # Its read-only connections see no later write: they are replaced after RECHECK_SECS.
        time.sleep(RECHECK_SECS * 1.5)
        written = _carol(memory)
        facts = memory.facts_about("Carol")

    assert written.outcome == "created"
    assert [f.object for f in facts] == ["tea"]


def test_a_write_over_http_on_a_full_disk_is_a_507_naming_the_disk_and_reads_answer(
    disk: Path,
) -> None:
    directory = disk / "mem"
    directory.mkdir()
    (directory / "apexmem.toml").write_text('[memory.vectors]\nembedder = "hashing"\n')
    app = create_app(Tenants(single=directory, token=TOKEN))
    globex = {"facts": [{"subject": "Bob", "relation": "works_at", "object": "Globex"}]}
    acme = {"facts": [{"subject": "Bob", "relation": "works_at", "object": "Acme"}]}

    with TestClient(app) as client:
        first = client.post("/v1/facts", json=globex, headers=AUTH)
        fill(disk)
        refused = client.post("/v1/facts", json=acme, headers=AUTH)
        stats = client.get("/v1/stats", headers=AUTH)

    assert first.status_code == 200, first.text
    assert refused.status_code == 507
    assert refused.json()["type"] == "urn:apexmem:problem:disk-full"
    assert f"the disk holding {directory} is full" in refused.json()["detail"]
    assert stats.status_code == 200
    assert stats.json()["events"] == first.json()["results"][0]["position"]
