"""Who leads the projections: one follower at a time, and another takes over when it dies.

Several `apexmem project --follow` processes may run against one memory (on PostgreSQL, on
several machines). Exactly-once never depends on this: every batch commits its tracking row
with its rows. Leadership only keeps the followers from doing the same work twice. Each
lease is held by something the operating system or the database server releases when its
holder dies, even by kill -9: a file lock for a directory, a session advisory lock for a
PostgreSQL schema.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Protocol

from blake3 import blake3

__all__ = ["AdvisoryLease", "FileLease", "Lease", "lead"]

LOCK_FILE: Final = "projector.lock"
"""The file a directory's leading follower holds locked."""


class Lease(Protocol):
    """A lease on leading the projections of one memory."""

    def try_acquire(self) -> bool:
        """Take the lease if nobody holds it; True when this process holds it now."""
        ...

    def release(self) -> None:
        """Give the lease up (a holder that dies gives it up without calling this)."""
        ...


class FileLease:
    """The lease of a memory directory: an exclusive `flock` on `projector.lock` in it."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class AdvisoryLease:
    """The lease of a PostgreSQL schema: a session advisory lock on its own connection.

    `connect` opens a DB-API connection in autocommit mode; the server drops the lock with
    the session when the holder's process or machine dies.
    """

    def __init__(self, connect: Callable[[], Any], *, schema: str) -> None:
        self._connect = connect
        self.key = lease_key(schema)
        self._connection: Any = None

    def try_acquire(self) -> bool:
        if self._connection is not None:
            return True
        connection = self._connect()
        row = connection.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()
        if not row[0]:
            connection.close()
            return False
        self._connection = connection
        return True

    def release(self) -> None:
        if self._connection is not None:
            self._connection.close()  # ending the session releases the lock
            self._connection = None


def lease_key(schema: str) -> int:
    """The advisory-lock key of a schema's projections: 63 bits of its name's BLAKE3."""
    digest = blake3(f"apexmem.projections:{schema}".encode()).digest(8)
    return int.from_bytes(digest, "big") >> 1


def lead(
    lease: Lease,
    *,
    should_stop: Callable[[], bool],
    wait: Callable[[float], None],
    interval: float = 1.0,
    waiting: Callable[[], None] | None = None,
) -> bool:
    """Block until this process holds `lease` (True) or `should_stop()` (False).

    Tries every `interval` seconds; `waiting` is called once, when the first try fails.
    """
    told = False
    while not should_stop():
        if lease.try_acquire():
            return True
        if not told and waiting is not None:
            waiting()
            told = True
        wait(interval)
    return False
