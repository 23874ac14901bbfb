"""Community detection that runs by itself: every `community_refresh_interval` messages
extracted, in a background thread, never holding up the write that crossed the mark.

The count is of messages extracted (the `extractions` read model, one row per message an
extractor read), looked at after every extraction pass: a detection starts each time it
passes a multiple of the interval (as the reference counts extractions). A detection in
progress is never doubled: a mark passed while one runs is taken by the next pass after.
The detection itself is `Communities.detect_communities`, an operation of the write
pipeline like any other; a failure is logged and the next mark tries again.
"""

from __future__ import annotations

import threading
from typing import Final

from sqlalchemy import Connection, func, select

from apexmem.readmodels import ReadModels
from apexmem.readmodels.tables import extractions
from apexmem.service.logs import get_logger
from apexmem.service.upkeep import Communities

__all__ = ["CommunityRefresh", "extracted_count"]

_logger = get_logger()
BACKFILL: Final = "backfill"
"""The kind of operation that records what an extraction pass read."""


def extracted_count(connection: Connection) -> int:
    """Messages an extractor has read so far."""
    return int(connection.execute(select(func.count()).select_from(extractions)).scalar_one())


class CommunityRefresh:
    """A post-commit policy after extraction passes: a detection every `interval` messages."""

    after: frozenset[str] = frozenset({BACKFILL})

    def __init__(self, communities: Communities, *, store: ReadModels, interval: int) -> None:
        self._communities = communities
        self._store = store
        self._interval = interval
        self._state = threading.Lock()
        self._worker: threading.Thread | None = None
        self._closed = False
        self._counted_at: int | None = None
        """The multiple of `interval` the last detection started at (or first looked at)."""
        self.detections = 0
        """Detections this policy started and finished (for `stats` and tests)."""

    def __call__(self) -> None:
        """After an extraction pass: start a detection when `interval` more messages were
        extracted since the last one started, unless one is running or the memory closes."""
        with self._store.read() as connection:
            count = extracted_count(connection)
        with self._state:
            mark = count - count % self._interval
            if self._counted_at is None:
                self._counted_at = mark
            if self._closed or mark <= self._counted_at or self._running():
                return
            self._counted_at = mark
            self._worker = threading.Thread(
                target=self._detect, name="apexmem-communities", daemon=True
            )
            self._worker.start()

    def wait(self) -> None:
        """Wait for the detection in progress, if any."""
        with self._state:
            worker = self._worker
        if worker is not None:
            worker.join()

    def close(self) -> None:
        """Start no more detections; wait for the one in progress."""
        with self._state:
            self._closed = True
        self.wait()

    def _running(self) -> bool:
        return self._worker is not None and self._worker.is_alive()

    def _detect(self) -> None:
        try:
            done = self._communities.detect_communities(actor="community-refresh")
        except Exception as e:  # the next mark tries again; the writes stand
            _logger.warning("communities.refresh_failed", error=repr(e))
            return
        with self._state:
            self.detections += 1
        _logger.info("communities.refreshed", formed=done.formed, dissolved=done.dissolved)
