"""WAL checkpoints in a thread of their own, so appends do not wait for them.

In WAL mode every commit appends pages to the `-wal` file, and a checkpoint copies them
back into the database file (and syncs both). SQLite runs that checkpoint inside whichever
commit crosses `wal_autocheckpoint`; for batched appends that commit then took several
times as long as the others, about half of all commit time. SQLite's documentation
suggests running checkpoints "in a separate thread" instead: a PASSIVE checkpoint never
blocks the writer, and the GIL is released while it runs. The log's own connections keep
their automatic checkpoint as a backstop, should this thread fall behind.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Final

__all__ = ["Checkpointer"]

_EVENTS_PER_CHECKPOINT: Final = 4_000
"""Appended events between two checkpoints: enough for pages rewritten by several batches
to be copied once, few enough that the WAL stays a few tens of megabytes."""
_COMMITS_PER_CHECKPOINT: Final = 500
"""Commits between two checkpoints when they are small (one fact each)."""


class Checkpointer:
    """Runs `PRAGMA wal_checkpoint(PASSIVE)` on its own connection when enough was appended."""

    def __init__(self, path: str, *, synchronous: str) -> None:
        self._path = path
        self._synchronous = synchronous
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._events = 0
        self._commits = 0
        self.checkpoints = 0
        """Checkpoints run so far (for tests and diagnostics)."""
        self.last_error: sqlite3.Error | None = None
        """The last error a checkpoint raised; the next one tries again."""

    def committed(self, events: int) -> None:
        """Count one committed append; wake the thread when a checkpoint is due."""
        self._events += events
        self._commits += 1
        if self._events < _EVENTS_PER_CHECKPOINT and self._commits < _COMMITS_PER_CHECKPOINT:
            return
        self._events = self._commits = 0
        with self._lock:
            if self._closing:
                return
            if self._thread is None:
                thread = threading.Thread(target=self._run, name="apexmem-checkpoint", daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # no thread to be had: automatic checkpoints carry on
                    return
                self._thread = thread
        self._wake.set()

    def close(self) -> None:
        """Stop the thread after the checkpoint in progress, if any."""
        with self._lock:
            self._closing = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        try:
            connection = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            connection.execute(f"PRAGMA synchronous={self._synchronous}")
        except sqlite3.Error as e:  # the log's own automatic checkpoints carry on
            self.last_error = e
            return
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._closing:
                    return
                try:
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.checkpoints += 1
                except sqlite3.Error as e:  # busy or locked: the next wake-up tries again
                    self.last_error = e
        finally:
            connection.close()
