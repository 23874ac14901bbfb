"""Writer processes on one PostgreSQL log: racing for the same stream versions, and killed
inside an append. Nothing acknowledged is lost, nothing is doubled or partial, and the
chain verifies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from uuid import UUID, uuid4

import psycopg
import pytest
from storage_backends import POSTGRES_URL, drop_schema, fresh_schema, open_postgres_log

from apexmem.events import FactsRetrieved, NewEvent
from apexmem.events.postgres_log import PostgresLog
from apexmem.replay.verify import verify

WRITER = Path(__file__).with_name("pg_writer_process.py")
WRITERS = 8
ROUNDS = 12


@pytest.fixture
def schema() -> Iterator[str]:
    """A schema no other test uses, dropped after."""
    name = fresh_schema()
    yield name
    drop_schema(name)


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WRITER), args[0], POSTGRES_URL, *args[1:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ready(writer: subprocess.Popen[str]) -> None:
    assert writer.stdout is not None
    line = writer.stdout.readline().strip()
    assert line == "ready", writer.stderr.read() if writer.stderr else line


@pytest.mark.slow  # eight Python processes start and race: ~10 s on two cores
def test_eight_writers_racing_for_each_version_of_a_stream_take_each_once_and_lose_nothing(
    schema: str, tmp_path: Path
) -> None:
    go, shared = tmp_path / "go", uuid4()
    # Every writer opens the new schema at once: it is created once.
    writers = [
        _start("race", schema, f"w{i}", str(ROUNDS), str(go), str(shared)) for i in range(WRITERS)
    ]
    for writer in writers:
        _ready(writer)
    go.touch()

    outputs = [writer.communicate(timeout=300) for writer in writers]

    assert [w.returncode for w in writers] == [0] * WRITERS, [err for _, err in outputs]
    lines = [line.split() for out, _ in outputs for line in out.splitlines()]
    winners = Counter(int(words[1]) for words in lines if words[0] == "won")
    beside = {UUID(words[2]) for words in lines if words[0] == "won"}
    fresh = {UUID(s) for words in lines if words[0] == "fresh" for s in words[2:]}
    keys = [words[1] for words in lines if words[0] == "fresh"]
    log = open_postgres_log(schema)
    try:
        events = list(log.read())
        stream = log.read_stream(shared)
        repeated = [log.repeated(key) for key in keys]
        report = verify(log)
    finally:
        log.close()
    assert winners == Counter(range(1, ROUNDS + 1))  # each version taken exactly once
    assert [e.version for e in stream] == list(range(1, ROUNDS + 1))
    assert len(keys) == WRITERS * ROUNDS
    assert all(r is not None and len(r.positions) == 3 for r in repeated)
    assert Counter(e.stream_id for e in events if e.stream_id != shared) == Counter(beside | fresh)
    assert len(events) == 2 * ROUNDS + 3 * WRITERS * ROUNDS  # nothing lost, doubled or partial
    assert [e.position for e in events] == list(range(1, len(events) + 1))
    assert all(a.recorded_at <= b.recorded_at for a, b in pairwise(events))
    assert report.ok and report.events_checked == len(events)


def _new() -> NewEvent:
    return NewEvent(stream_id=uuid4(), version=1, data=FactsRetrieved(fact_ids=[]))


def _holds_lock(schema: str) -> bool:
    """Whether a transaction holds the EXCLUSIVE lock of the log in `schema` (mid-append)."""
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
            "AND c.relname = 'log_events' AND l.mode = 'ExclusiveLock' AND l.granted",
            (schema,),
        ).fetchone()
    return row is not None and row[0] > 0


def test_a_writer_killed_inside_an_append_leaves_none_of_its_batch(schema: str) -> None:
    open_postgres_log(schema).close()
    writer = _start("batches", schema, "k", "2000")
    _ready(writer)
    assert writer.stdout is not None
    acked_before = [writer.stdout.readline().split()[1] for _ in range(2)]
    deadline = time.monotonic() + 30  # a bound on the wait, not a timing assertion
    while not (holding := _holds_lock(schema)) and time.monotonic() < deadline:
        pass

    os.kill(writer.pid, signal.SIGKILL)
    rest, _ = writer.communicate(timeout=30)

    acked = acked_before + [line.split()[1] for line in rest.splitlines()]
    log = open_postgres_log(schema)
    try:
        # The killed writer's connection is gone, and its lock with it.
        after = log.append(
            [NewEvent(stream_id=uuid4(), version=1, data=FactsRetrieved(fact_ids=[]))]
        )
        batches = Counter(e.episode for e in log.read() if e.episode is not None)
        report = verify(log)
        last = log.last_position()
    finally:
        log.close()
    assert holding and writer.returncode == -signal.SIGKILL
    assert set(acked) <= set(batches)
    assert set(batches.values()) == {2000}  # every batch whole, none in part
    assert after.positions == [last] == [sum(batches.values()) + 1]
    assert report.ok and report.events_checked == last


def test_a_reader_during_appends_sees_whole_batches_without_gaps_and_a_chain_that_verifies(
    schema: str,
) -> None:
    writer = _start("batches", schema, "r", "200")
    _ready(writer)
    log: PostgresLog | None = None
    try:
        log = open_postgres_log(schema)
        seen = []
        for _ in range(5):
            seen.append(([e.position for e in log.read()], verify(log)))
    finally:
        writer.kill()
        writer.communicate(timeout=30)
        if log is not None:
            log.close()

    for positions, report in seen:
        assert positions == list(range(1, len(positions) + 1))
        assert len(positions) % 200 == 0  # whole batches only
        assert report.ok and report.events_checked >= len(positions)  # verify read later
