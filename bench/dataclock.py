"""The clock a bench reader opens a memory with: the simulated now of its data.

Bench writers record with simulated clocks (2024 and 2025 dates). Read at the wall clock,
years later, every fact would have faded (confidence decay, 0.01 per day by default) and
recall and present-time queries would answer from nothing. A reader measures at the time
its data was written instead: the last recorded time of the log.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from apexmem.composition import open_log
from apexmem.domain.settings import Settings
from apexmem.location import locate

__all__ = ["data_clock"]


def data_clock(place: Path | str) -> Callable[[], datetime]:
    """A clock standing at the last recorded time of the memory in `place`, a directory or a
    PostgreSQL URL (the wall clock for an empty log)."""
    log = open_log(locate(place), settings=Settings(), create=False)
    try:
        last = log.last_recorded_at()
    finally:
        log.close()
    moment = last if last is not None else datetime.now(UTC)
    return lambda: moment
