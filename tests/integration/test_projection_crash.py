"""A projection process killed mid-way loses nothing and applies nothing twice.

`apexmem project --follow` runs as its own process beside a log of ~20,000 events (with
supersessions and withdrawals), is SIGKILLed while part-way, and a second `apexmem project`
finishes the work; the read models then equal ones projected from scratch from the same log.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final
from uuid import UUID

import pytest

from apexmem import Memory, RetractFact
from apexmem.readmodels import ReadModelStore, dump, tracked_position

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]
SETTINGS: Final = "[memory.projection]\ninline = false\nbatch_size = 50\n"
EVENTS: Final = 20_000
START: Final = datetime(2020, 1, 1, tzinfo=UTC)


def _fill(memory: Memory, events: int) -> None:
    """Append batches of facts until the log holds `events`: employers change (supersessions),
    tools are taken up, and some of those are withdrawn."""
    rng = random.Random(7)
    withdrawable: list[UUID] = []
    day = 0
    while memory.log.last_position() < events:
        day += 1
        batch = [_fact(rng, day) for _ in range(250)]
        results = memory.assert_facts(batch)
        withdrawable += [r.fact_id for r, f in zip(results, batch, strict=True) if _taken_up(r, f)]
        rng.shuffle(withdrawable)
        withdrawn, withdrawable = withdrawable[:20], withdrawable[20:]
        memory.execute([RetractFact(fact_id=f, reason="dropped") for f in withdrawn])


def _fact(rng: random.Random, day: int) -> dict[str, Any]:
    person = f"Person {rng.randrange(200):03d}"
    if rng.random() < 0.5:
        target, target_type, relation = f"Org {rng.randrange(30):02d}", "organization", "works_at"
    else:
        target, target_type, relation = f"Tool {rng.randrange(50):02d}", "tool", "uses"
    return {
        "subject": person,
        "subject_type": "person",
        "relation": relation,
        "object": target,
        "object_type": target_type,
        "valid_from": START + timedelta(days=day),
    }


def _taken_up(result: Any, fact: dict[str, Any]) -> bool:
    return bool(fact["relation"] == "uses" and result.outcome == "created")


def _position(store: ReadModelStore) -> int:
    with store.read() as connection:
        return tracked_position(connection, "graph")


def _killed_part_way(db: Path, store: ReadModelStore, last: int) -> int:
    """Start `project --follow`, SIGKILL it once it has applied a third but not all events.

    Where it dies does not change the total work: what it leaves, the next run does.
    """
    follower = subprocess.Popen(
        [*APEXMEM, "--db", str(db), "project", "--follow"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not last // 3 < _position(store) < last and time.monotonic() < deadline:
            assert follower.poll() is None, "the follower exited by itself"
            time.sleep(0.005)
    finally:
        os.kill(follower.pid, signal.SIGKILL)
        follower.wait(timeout=30)
    return _position(store)


@pytest.mark.slow
def test_a_follower_killed_mid_way_then_restarted_equals_a_projection_from_scratch(
    tmp_path: Path,
) -> None:
    db = tmp_path / "mem"
    db.mkdir()
    (db / "apexmem.toml").write_text(SETTINGS, encoding="utf-8")
    with Memory.open(db) as memory:
        _fill(memory, EVENTS)
        last = memory.log.last_position()
    store = ReadModelStore(db / "readmodels.db")

    stopped = _killed_part_way(db, store, last)
    finished = subprocess.run(
        [*APEXMEM, "--db", str(db), "project"], capture_output=True, text=True, check=False
    )
    with (
        Memory.open(db) as memory,
        memory.replay(until=last, into=tmp_path / "fresh") as fresh,
        fresh.store.read() as connection,
    ):
        from_scratch = dump(connection)
    with store.read() as connection:
        incremental = dump(connection)
    store.close()

    assert 0 < stopped < last
    assert finished.returncode == 0, finished.stderr
    assert incremental["tracking"] == [("graph", last), ("vectors", last)]
    assert incremental == from_scratch
