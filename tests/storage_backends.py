"""The storage backends the contract tests (tests/contract) run against, and what a test
may do to each.

A new backend adds its name to LOGS (or STORES) and a branch to `open_log` (or
`open_store`); every contract test then runs against it too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from apexmem.events import EventLog, InMemoryLog, Log
from apexmem.readmodels import ReadModels, ReadModelStore

T0: Final = datetime(2024, 1, 1, tzinfo=UTC)
LOGS: Final = ("sqlite", "memory")
STORES: Final = ("sqlite",)
Clock = Callable[[], datetime]


def open_log(backend: str, directory: Path, clock: Clock) -> Log:
    """A new, empty log of `backend` on `clock`."""
    if backend == "sqlite":
        return EventLog(directory / "events.db", clock=clock)
    if backend == "memory":
        return InMemoryLog(clock=clock)
    raise AssertionError(f"no such log backend: {backend}")


def open_store(backend: str, path: Path) -> ReadModels:
    """A read-model store of `backend` at `path` (opened again when it exists)."""
    if backend == "sqlite":
        return ReadModelStore(path)
    raise AssertionError(f"no such store backend: {backend}")


def tamper(log: Log, position: int) -> None:
    """Change one bit of the record stored at `position`, as access to the storage could."""
    if isinstance(log, EventLog):
        db = sqlite3.connect(log.path)
        with db:
            [(state,)] = db.execute("SELECT state FROM stored_events WHERE rowid = ?", (position,))
            db.execute(
                "UPDATE stored_events SET state = ? WHERE rowid = ?", (_flipped(state), position)
            )
        db.close()
        return
    assert isinstance(log, InMemoryLog)
    rows = log._rows  # the fake's storage: what the SQLite file is to file access
    row = rows[position - 1]
    rows[position - 1] = row._replace(state=_flipped(row.state))


def _flipped(state: bytes) -> bytes:
    """`state` with its last byte's lowest bit flipped."""
    return state[:-1] + bytes([state[-1] ^ 1])
