"""A progress bar per stage of the suite (rich, on stderr), and the resources a stage leaves.

Each stage is one bar; when it ends, a line gives its label, elapsed time and the process's
peak RSS so far, so a log file (where no bar is drawn) still tells where the time went.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["Advance", "finished_stages", "load_average", "peak_rss_bytes", "rss_bytes", "stage"]

_CONSOLE: Final = Console(stderr=True)
_FINISHED: Final[list[dict[str, float | str]]] = []
Advance = Callable[[int], None]
"""Move the bar to `completed` (an absolute count, as the projection runner reports it)."""


def peak_rss_bytes() -> int:
    """The peak resident set size of this process so far (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_bytes() -> int:
    """The resident set size of this process now."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def finished_stages() -> list[dict[str, float | str]]:
    """Each stage this process ran: label, seconds, peak RSS after it, load average at its end."""
    return list(_FINISHED)


def load_average() -> float:
    """The one-minute load average: above the bench's own work, other work shared the cores."""
    return round(os.getloadavg()[0], 2)


@contextmanager
def stage(label: str, total: int | None, *, size: int) -> Iterator[Advance]:
    """A bar for one stage of the run at `size` facts; yields the function that moves it."""
    columns = (
        TextColumn(f"[bold]{size:>9,}[/] {label:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    started = time.perf_counter()
    with Progress(*columns, console=_CONSOLE, disable=not _CONSOLE.is_terminal) as bar:
        task = bar.add_task(label, total=total)
        yield lambda completed: bar.update(task, completed=completed)
        bar.update(task, completed=total)
    seconds, peak, load = time.perf_counter() - started, peak_rss_bytes(), load_average()
    _FINISHED.append({"stage": label, "seconds": seconds, "peak_rss_bytes": peak, "load": load})
    _CONSOLE.print(
        f"{size:>9,} {label:<28} {seconds:8.1f} s   peak RSS {peak / 2**20:,.0f} MiB   load {load}",
        highlight=False,
    )
