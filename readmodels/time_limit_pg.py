"""A PostgreSQL read's time limit: the statement running when the recall is out of time is
canceled, and the block ends with it.

One watcher thread serves every time-limited block of the process: a thread started and
joined per block, with a SAVEPOINT and a RELEASE around it, cost 0.5 ms a recall, more
than most of its statements. The block now costs one SAVEPOINT, left to end with the
transaction unless a cancel rolls back to it.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final, NamedTuple

import psycopg
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from apexmem.readmodels.prepared import driver_cursor

__all__ = ["time_limited"]

_POLL_SECONDS: Final = 0.002
"""How often a time limit asks its `out_of_time` while a statement runs."""
_SAVEPOINT: Final = "apexmem_time_limit"


class _Block(NamedTuple):
    """A watched block."""

    raw: Any
    """The driver's connection."""
    out_of_time: Callable[[], bool]
    canceled: threading.Event


class _Watcher:
    """The thread that asks each watched block's `out_of_time` every `_POLL_SECONDS` and
    cancels the statement of a block out of time. It waits while no block is watched; it
    is started on first use in a process (again in a forked child, which has no threads)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every block and the thread (in a forked child: the parent's lock may have
        been held at the fork, and its thread is not there)."""
        self._lock = threading.Lock()
        self._watched = threading.Condition(self._lock)
        self._blocks: dict[int, _Block] = {}
        self._keys = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, raw: Any, out_of_time: Callable[[], bool]) -> tuple[int, threading.Event]:
        canceled = threading.Event()
        with self._lock:
            key = next(self._keys)
            self._blocks[key] = _Block(raw, out_of_time, canceled)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="apexmem-time-limit", daemon=True
                )
                self._thread.start()
            self._watched.notify()
        return key, canceled

    def unwatch(self, key: int) -> None:
        """Stop watching; no cancel comes for the block after this returns."""
        with self._lock:
            self._blocks.pop(key, None)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._blocks:
                    self._watched.wait()
                for key, (raw, out_of_time, canceled) in list(self._blocks.items()):
                    if out_of_time():
                        del self._blocks[key]
                        canceled.set()
                        raw.cancel()
            time.sleep(_POLL_SECONDS)


_WATCHER: Final = _Watcher()
os.register_at_fork(after_in_child=_WATCHER.reset)


@contextmanager
def time_limited(connection: Connection, out_of_time: Callable[[], bool]) -> Iterator[None]:
    """Cancel the statement running when `out_of_time()` says so, and end the block with it.

    `out_of_time` is a question, not a duration, so a statement timeout cannot stand in
    for it. The block begins with a savepoint so that the transaction stays usable after a
    cancel (PostgreSQL aborts a transaction whose statement failed): a cancel rolls back to
    it, and otherwise it ends with the transaction (a read's: releasing it was one more
    round trip).
    """
    raw = connection.connection.driver_connection
    with driver_cursor(connection) as cursor:
        cursor.execute(f"SAVEPOINT {_SAVEPOINT}")
    key, canceled = _WATCHER.watch(raw, out_of_time)
    try:
        yield
    except psycopg.errors.QueryCanceled:  # from the driver's cursor (readmodels.prepared)
        pass
    except DBAPIError as error:
        if not isinstance(error.orig, psycopg.errors.QueryCanceled):
            raise
    finally:
        _WATCHER.unwatch(key)
    if canceled.is_set():  # also a cancel that came after the last statement
        with driver_cursor(connection) as cursor:
            cursor.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
