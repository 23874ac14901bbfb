"""Logs written before located ids (tests/golden/logs) keep working: their hash-derived fact
and message ids are found through the key table they hold, and new facts get located ids."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import msgspec
import pytest

from apexmem import Memory, Settings
from apexmem.events import EventLog
from apexmem.events.envelope import lookup_key
from apexmem.events.fact import FactAsserted
from apexmem.events.located import location
from apexmem.replay.verify import verify

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "logs"
LOG_ONLY = msgspec.convert({"memory": {"projection": {"inline": False}}}, Settings)
ACME = UUID("da4f9ec3-8c43-5d22-aedf-7aa56b0152e1")  # Alice works at Acme, retracted
INITECH = UUID("111f8499-2f7e-5b3c-8be3-04a39a5120ed")  # Alice works at Initech, from 2024-02
MESSAGE = UUID("961b469c-3155-5bff-8f50-ff9914ff6da5")


@pytest.fixture(params=["binary", "text"])
def older(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A memory directory holding a copy of one golden log."""
    shutil.copy(GOLDEN / f"{request.param}-ids.db", tmp_path / "events.db")
    return tmp_path


def test_every_fact_and_message_of_an_older_log_is_found_by_its_id(older: Path) -> None:
    log = EventLog(older / "events.db")
    try:
        keyed = [(e.position, key) for e in log.read() if (key := lookup_key(e.data)) is not None]
        found = [log.find(key) for _, key in keyed]
        report = verify(log)
    finally:
        log.close()

    assert [key for _, key in keyed] == [
        f"fact:{ACME}",
        f"fact:{INITECH}",
        "fact:41198f26-e72c-50c9-8bc3-3c77b4cda547",
        f"message:{MESSAGE}",
    ]
    assert [f.position if f is not None else None for f in found] == [p for p, _ in keyed]
    assert report.ok and report.events_checked == 17


def test_a_memory_on_an_older_log_supersedes_and_retracts_old_facts_with_new_ids(
    older: Path,
) -> None:
    with Memory.open(older, settings=LOG_ONLY) as memory:
        moved = memory.assert_fact(
            subject="Alice",
            subject_type="person",
            relation="works_at",
            object="Globex",
            object_type="organization",
            valid_from=datetime(2024, 6, 1, tzinfo=UTC),
        )
        retracted = memory.retract(INITECH, reason="never started there")
        history = memory.history(fact=INITECH)
        found = memory.log.find(f"fact:{moved.fact_id}")
        report = memory.verify()

    low, high, version = location(moved.fact_id)
    assert moved.outcome == "superseded" and moved.supersedes == INITECH
    assert low <= moved.slot_id <= high and version == 6  # a located id in the old slot
    assert found is not None and isinstance(found.data, FactAsserted)
    assert found.data.fact_id == moved.fact_id and found.stream_id == moved.slot_id
    assert retracted.fact_id == INITECH
    assert [h.tag for h in history][-1] == "fact-retracted.v1"
    assert report.ok


def test_an_older_key_table_with_rowids_finds_the_same_events(older: Path) -> None:
    # Logs made before the key table was WITHOUT ROWID: the same rows in a rowid table.
    with sqlite3.connect(older / "events.db") as db:
        db.executescript(
            "CREATE TABLE keys_with_rowids AS SELECT * FROM event_keys;"
            "DROP TABLE event_keys;"
            "ALTER TABLE keys_with_rowids RENAME TO event_keys;"
            "CREATE UNIQUE INDEX event_keys_key ON event_keys (key);"
        )
    db.close()

    log = EventLog(older / "events.db")
    try:
        fact, message = log.find(f"fact:{INITECH}"), log.find(f"message:{MESSAGE}")
    finally:
        log.close()

    assert fact is not None and fact.position == 9
    assert message is not None and message.position == 16
