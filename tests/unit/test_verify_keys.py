"""`verify` checks the idempotency keys and the time index against the chained records, and
checks the end of the chain alone (what opening a memory does)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import uuid4

from apexmem.events import EventLog, FactsRetrieved, NewEvent
from apexmem.replay.verify import verify, verify_tail

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _event(cause: str | None = None) -> NewEvent:
    stream = uuid4()
    return NewEvent(
        stream_id=stream, version=1, data=FactsRetrieved(fact_ids=[stream]), cause=cause
    )


def _log(path: Path) -> EventLog:
    """Positions 1-2 without a key, 3-4 under key k1 (its events caused by it), 5 under k2."""
    ticks = iter(range(1, 100))
    log = EventLog(path, clock=lambda: T0 + timedelta(seconds=next(ticks)))
    log.append([_event(), _event()])
    log.append([_event("k1"), _event("k1")], idempotency_key="k1")
    log.append([_event("k2")], idempotency_key="k2")
    return log


def _edit(path: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql, params)
    db.close()


def _micros(path: Path, key: str) -> int:
    with sqlite3.connect(path) as db:
        [(at,)] = db.execute("SELECT recorded_at FROM idempotency WHERE key = ?", (key,))
    db.close()
    return int(at)


def test_a_key_laid_over_an_append_of_another_time_is_found(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    log = _log(path)

    _edit(path, "INSERT INTO idempotency VALUES ('forged', 1, 2, ?, NULL)", _micros(path, "k1"))
    report = verify(log)

    assert (report.ok, report.first_bad_position) == (False, 1)
    assert "'forged'" in str(report.reason)


def test_a_key_moved_off_its_own_events_is_found_where_they_are(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    log = _log(path)

    _edit(path, "UPDATE idempotency SET first_position = 5, last_position = 5 WHERE key = 'k1'")
    report = verify(log)

    assert (report.ok, report.first_bad_position) == (False, 3)
    assert "'k1'" in str(report.reason)


def test_keys_that_overlap_or_point_past_the_end_are_found(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    log = _log(path)
    at = _micros(path, "k2")

    _edit(path, "INSERT INTO idempotency VALUES ('later', 6, 7, ?, NULL)", at)
    past_the_end = verify(log)
    _edit(path, "DELETE FROM idempotency WHERE key = 'later'")
    _edit(path, "INSERT INTO idempotency VALUES ('overlap', 4, 5, ?, NULL)", at)
    overlapping = verify(log)

    assert (past_the_end.ok, past_the_end.first_bad_position) == (False, 6)
    assert past_the_end.events_checked == 5
    assert (overlapping.ok, overlapping.first_bad_position) == (False, 4)


def test_an_empty_keyed_append_and_untouched_keys_verify(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    log = _log(path)
    log.append([], idempotency_key="empty")

    report = verify(log)

    assert (report.ok, report.events_checked, report.head_position) == (True, 5, 5)


def test_the_tail_check_reads_only_the_end_and_finds_damage_there(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    log = _log(path)

    whole = verify_tail(log, count=2)
    _edit(path, "UPDATE stored_events SET topic = 'x' WHERE rowid = 1")
    early_damage = verify_tail(log, count=2)
    _edit(path, "UPDATE log_index SET recorded_at = recorded_at + 1 WHERE position = 5")
    late_damage = verify_tail(log, count=2)

    assert (whole.ok, whole.events_checked, whole.head_position) == (True, 2, 5)
    assert early_damage.ok  # outside the tail: left to a full verify
    assert (late_damage.ok, late_damage.first_bad_position) == (False, 5)
    assert not verify(log).ok
