"""The log's background checkpoints: WAL pages reach the database file off the append path,
and a writer killed meanwhile loses nothing it acknowledged."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from uuid import uuid4

import msgspec

from apexmem import Memory, Settings
from apexmem.events import EventLog, FactsRetrieved, NewEvent
from apexmem.events.checkpoint import Checkpointer
from apexmem.replay.verify import verify

WRITER = Path(__file__).with_name("batch_writer_process.py")
LOG_ONLY = msgspec.convert({"memory": {"projection": {"inline": False}}}, Settings)


def _wait_until(done: Callable[[], bool], *, seconds: float = 60.0) -> None:
    """Poll `done()` until it is true (a deadline against hangs, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.01)


def _wal_database(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA wal_autocheckpoint=0")  # only the checkpointer copies pages
    connection.execute("CREATE TABLE t (x BLOB)")
    return connection


def test_a_checkpoint_copies_every_committed_page_back_into_the_database(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    connection = _wal_database(path)
    with connection:
        connection.execute("BEGIN")
        connection.executemany("INSERT INTO t VALUES (?)", [(os.urandom(500),)] * 2_000)
    checkpointer = Checkpointer(str(path), synchronous="NORMAL")

    checkpointer.committed(10_000)
    _wait_until(lambda: checkpointer.checkpoints >= 1)
    checkpointer.close()
    copied = path.stat().st_size  # nothing else checkpoints: autocheckpoint is off
    connection.close()

    assert checkpointer.last_error is None
    assert copied > 2_000 * 500


def test_small_appends_do_not_wake_the_checkpointer(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    _wal_database(path).close()
    checkpointer = Checkpointer(str(path), synchronous="NORMAL")

    for _ in range(10):
        checkpointer.committed(1)
    checkpointer.close()

    assert checkpointer.checkpoints == 0


def test_a_closed_checkpointer_is_not_woken_again(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    _wal_database(path).close()
    checkpointer = Checkpointer(str(path), synchronous="FULL")
    checkpointer.close()

    checkpointer.committed(10_000)

    assert checkpointer.checkpoints == 0


def test_a_log_appending_many_events_verifies_after_background_checkpoints(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.db"
    log = EventLog(path)
    opened = path.stat().st_size
    for _ in range(6):
        log.append(
            [
                NewEvent(stream_id=uuid4(), version=1, data=FactsRetrieved(fact_ids=[]))
                for _ in range(1_000)
            ]
        )
    # Far below the automatic checkpoint's 10,000 pages: only the thread copies pages out.
    _wait_until(lambda: path.stat().st_size > opened)
    log.close()

    reopened = EventLog(path)
    count = reopened.count()
    report = verify(reopened)
    reopened.close()

    assert count == 6_000
    assert report.ok


def test_a_batch_writer_killed_after_checkpoints_loses_no_acknowledged_fact(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "mem"
    Memory.open(directory, settings=LOG_ONLY).close()
    database = directory / "events.db"
    empty = database.stat().st_size
    writer = subprocess.Popen(
        [sys.executable, str(WRITER), str(directory), "500"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "ready"
    acknowledged: list[str] = []
    deadline = time.monotonic() + 120
    # Until the checkpoint thread has copied pages into the database file, then a little more.
    while (database.stat().st_size == empty or len(acknowledged) < 8_000) and (
        time.monotonic() < deadline
    ):
        line = writer.stdout.readline()
        if not line:  # the writer died: its stderr says why
            break
        acknowledged.extend(line.split())

    os.kill(writer.pid, signal.SIGKILL)
    rest, _ = writer.communicate(timeout=30)
    acknowledged.extend(rest.split())

    with Memory.open(directory, settings=LOG_ONLY) as memory:
        report = memory.verify()
        missing = [f for f in acknowledged if memory.log.find(f"fact:{f}") is None]
        again = memory.assert_fact(subject="after the crash", relation="knows", object="someone")
    assert database.stat().st_size > empty
    assert len(acknowledged) >= 8_000
    assert missing == []
    assert report.ok
    assert again.outcome == "created"
