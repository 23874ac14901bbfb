"""A progress bar on stderr for long work (projection, rebuild, replay), only for people."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from apexmem.replay.runner import Progress

__all__ = ["interactive", "progress_bar"]


def interactive(as_json: bool) -> bool:
    """Whether a person watches: stderr is a terminal and `--json` was not asked for."""
    return not as_json and sys.stderr.isatty()


@contextmanager
def progress_bar(label: str, *, as_json: bool) -> Iterator[Progress | None]:
    """A `(position reached, target position)` callback drawing a bar, or None if nobody watches."""
    if not interactive(as_json):
        yield None
        return
    from rich.progress import Progress as Bar

    from apexmem.cli.render import errors

    with Bar(console=errors, transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(position: int, target: int) -> None:
            bar.update(task, completed=position, total=target)

        yield update
