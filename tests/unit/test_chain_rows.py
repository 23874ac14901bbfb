"""The chain and time index as stored: one `log_index` row per append, at its last position,
holding its events' chain hashes in order; copies, lookups and verify read them per position."""

from __future__ import annotations

import sqlite3
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sample_events import event

from apexmem.events import EventLog, NewEvent
from apexmem.events.chain import GENESIS, link
from apexmem.replay.verify import verify

START = datetime(2024, 1, 1, tzinfo=UTC)
MOMENTS = [START + timedelta(seconds=s) for s in range(10)]
"""Before, at and after each append's time (these logs have at most eight appends)."""


def ticking() -> EventLog:
    """A log in a fresh directory whose clock moves one second per append."""
    ticks = [START]

    def now() -> datetime:
        ticks.append(ticks[-1] + timedelta(seconds=1))
        return ticks[-1]

    return EventLog(Path(tempfile.mkdtemp()) / "events.db", clock=now)


def fresh(count: int, seed: int) -> list[NewEvent]:
    """`count` events, each the first of its own stream."""
    streams = [UUID(int=(seed << 16) + n + 1) for n in range(count)]
    return [
        NewEvent(stream_id=s, version=1, data=event(n % 3, s, s, 1)) for n, s in enumerate(streams)
    ]


def write(sizes: list[int]) -> EventLog:
    """A log with one append per size."""
    log = ticking()
    for i, size in enumerate(sizes):
        log.append(fresh(size, i))
    return log


def stored_rows(path: Path) -> list[tuple[int, int]]:
    """(position, hashes held) of every log_index row."""
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT position, length(chain) / 32 FROM log_index ORDER BY 1"
        ).fetchall()
    db.close()
    return [(int(p), int(n)) for p, n in rows]


def recomputed(path: Path) -> list[bytes]:
    """The chain hash of every position, computed again from the stored records."""
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT originator_id, originator_version, topic, state FROM stored_events "
            "ORDER BY rowid"
        ).fetchall()
    db.close()
    hashes, previous = [], GENESIS
    for stream, version, tag, state in rows:
        previous = link(previous, bytes(stream), version, tag, bytes(state))
        hashes.append(previous)
    return hashes


SIZES = st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=8)


@given(sizes=SIZES)
def test_each_append_stores_one_row_at_its_last_position_with_every_hash(
    sizes: list[int],
) -> None:
    log = write(sizes)
    try:
        last = log.last_position()
        found = log.chains(range(1, last + 1))
        report = verify(log)
    finally:
        log.close()

    ends = [(sum(sizes[: i + 1]), size) for i, size in enumerate(sizes) if size]
    assert stored_rows(log.path) == ends
    assert [found[p] for p in range(1, last + 1)] == recomputed(log.path)
    assert report.ok and report.events_checked == last


@given(sizes=SIZES.filter(any), data=st.data())
def test_a_copy_up_to_any_position_verifies_and_keeps_the_hashes_and_times(
    sizes: list[int], data: st.DataObject
) -> None:
    log = write(sizes)
    last = log.last_position()
    until = data.draw(st.integers(min_value=1, max_value=last), label="until")
    target = log.path.with_name("copy.db")
    try:
        log.copy_to(target, until=until)
        source_chains = log.chains(range(1, until + 1))
        source_times = [log.position_at(moment) for moment in MOMENTS]
    finally:
        log.close()

    copy = EventLog(target)
    try:
        report = verify(copy)
        chains = copy.chains(range(1, until + 1))
        times = [copy.position_at(moment) for moment in MOMENTS]
    finally:
        copy.close()

    assert report.ok and report.events_checked == until
    assert chains == source_chains
    assert times == [min(t, until) for t in source_times]


def tampered(sql: str) -> EventLog:
    """A log of appends of 3, 4 and 2 events (rows at 3, 7, 9), changed by `sql`."""
    log = write([3, 4, 2])
    log.close()
    with sqlite3.connect(log.path) as db:
        db.execute(sql)
    db.close()
    return EventLog(log.path)


def test_a_flipped_byte_in_a_stored_hash_is_found_at_its_position() -> None:
    # The row at 7 holds the hashes of 4..7: byte 32 is the first of position 5's hash.
    log = write([3, 4, 2])
    log.close()
    with sqlite3.connect(log.path) as db:
        [(chain,)] = db.execute("SELECT chain FROM log_index WHERE position = 7")
        flipped = bytearray(chain)
        flipped[32] ^= 0xFF
        db.execute("UPDATE log_index SET chain = ? WHERE position = 7", (bytes(flipped),))
    db.close()
    log = EventLog(log.path)
    report = verify(log)
    log.close()

    assert not report.ok and report.first_bad_position == 5
    assert report.events_checked == 4


@pytest.mark.parametrize(
    ("change", "first_bad", "reason"),
    [
        (  # the row at 7 held 4..7: position 4 has no hash left
            "UPDATE log_index SET chain = substr(chain, 33) WHERE position = 7",
            4,
            "the chain row of this position is missing",
        ),
        (  # a row at 8 with two hashes claims 7 again
            "INSERT INTO log_index SELECT 8, recorded_at, substr(chain, 1, 64) "
            "FROM log_index WHERE position = 7",
            8,
            "the chain row at position 8 covers positions 7..7, which an earlier row covers",
        ),
        (
            "UPDATE log_index SET chain = CAST(chain || x'00' AS BLOB) WHERE position = 3",
            1,
            "the chain row at position 3 holds 97 bytes, not whole hashes",
        ),
    ],
    ids=["lost-first-hash", "overlapping-row", "partial-hash"],
)
def test_a_changed_row_is_reported_at_the_first_position_it_breaks(
    change: str, first_bad: int, reason: str
) -> None:
    log = tampered(change)
    report = verify(log)
    log.close()

    assert not report.ok
    assert (report.first_bad_position, report.reason) == (first_bad, reason)


def test_a_log_written_with_a_row_per_position_reads_and_extends_alike() -> None:
    log = write([3, 2])
    log.close()
    with sqlite3.connect(log.path) as db:  # the layout logs had before: a row per position
        rows = db.execute("SELECT position, recorded_at, chain FROM log_index").fetchall()
        db.execute("DELETE FROM log_index")
        db.executemany(
            "INSERT INTO log_index VALUES (?,?,?)",
            [
                (end - count + 1 + i, micros, chain[i * 32 : (i + 1) * 32])
                for end, micros, chain in rows
                for count in [len(chain) // 32]
                for i in range(count)
            ],
        )
    db.close()

    older = EventLog(log.path, clock=lambda: START + timedelta(days=1))
    try:
        before = older.chains(range(1, 6))
        older.append(fresh(4, 99))
        report = verify(older)
        after = older.chains(range(1, 10))
    finally:
        older.close()

    assert stored_rows(log.path) == [(1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (9, 4)]
    assert list(after.values()) == recomputed(log.path)
    assert {p: after[p] for p in before} == before
    assert report.ok and report.events_checked == 9


def test_verify_while_another_writer_appends_finds_nothing_wrong(tmp_path: Path) -> None:
    writer, reader = EventLog(tmp_path / "events.db"), EventLog(tmp_path / "events.db")
    writer.append(fresh(3, 0))
    done = threading.Event()

    def append() -> None:
        seed = 1
        while not done.is_set():
            writer.append(fresh(3, seed))
            seed += 1

    thread = threading.Thread(target=append)
    thread.start()
    try:
        reports = [verify(reader) for _ in range(50)]
        # On a busy machine the writer may not have run yet: verify until it has.
        deadline = time.monotonic() + 30
        while reports[-1].events_checked == reports[0].events_checked:
            assert time.monotonic() < deadline, "the writer never appended"
            reports.append(verify(reader))
    finally:
        done.set()
        thread.join()
        writer.close()
        reader.close()

    assert [r.reason for r in reports if not r.ok] == []
    assert reports[-1].events_checked > reports[0].events_checked
