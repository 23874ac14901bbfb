"""Keeping the read models: `apexmem project [--follow]`, `apexmem rebuild`, `apexmem stats`."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

import click

from apexmem.cli.progress import progress_bar
from apexmem.cli.state import State, pass_state
from apexmem.replay.leadership import lead

if TYPE_CHECKING:
    from apexmem.memory import Memory

__all__ = ["project", "rebuild", "stats"]


@click.command()
@click.option("--follow", is_flag=True, help="Keep projecting new events until SIGTERM or SIGINT.")
@pass_state
def project(state: State, follow: bool) -> None:
    """Apply the events the read models have not seen yet, exactly once.

    With --follow it keeps applying them as the log grows, until SIGTERM or Ctrl-C
    (exit status 0): run it beside writers whose apexmem.toml sets
    `[memory.projection] inline = false`. Each catch-up is logged as
    projection.caught_up (set APEXMEM_LOG_LEVEL=INFO to see it).

    Example: apexmem --db ./mem project --follow
    """
    with state.open() as memory:
        if follow:
            _follow(state, memory)
            return
        with progress_bar("projecting", as_json=state.as_json) as progress:
            done = memory.project(progress=progress)
    state.say(
        done,
        f"projected {done.events} events in {done.batches} batches; "
        f"the read models are at position {done.position}",
    )


def _follow(state: State, memory: Memory) -> None:
    from apexmem.service.logs import get_logger

    logger = get_logger()

    def caught_up(projection: str, position: int) -> None:
        logger.info("projection.caught_up", projection=projection, position=position)

    def waiting() -> None:
        logger.info("projection.waiting", reason="another follower leads")

    lease = memory.lease()
    with _stop_on_signals() as stopped:
        try:
            if not lead(lease, should_stop=stopped, wait=time.sleep, waiting=waiting):
                position = memory.projections.position()
                state.say({"position": position}, f"stopped before leading; at {position}")
                return
            logger.info("projection.following", memory=memory.location)
            with progress_bar("following the log", as_json=state.as_json) as progress:
                position = memory.projections.follow(
                    should_stop=stopped, progress=progress, caught_up=caught_up
                )
        finally:
            lease.release()
    logger.info("projection.stopped", projection="graph", position=position)
    state.say({"position": position}, f"stopped; the read models are at position {position}")


@contextmanager
def _stop_on_signals() -> Iterator[Callable[[], bool]]:
    """`should_stop` for Projections.follow: true once SIGTERM or SIGINT arrived."""
    received: list[int] = []

    def handle(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)

    previous = {s: signal.signal(s, handle) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield lambda: bool(received)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@click.command()
@pass_state
def rebuild(state: State) -> None:
    """Drop the read models and project the whole log again (deterministic).

    Example: apexmem --db ./mem rebuild
    """
    started = time.perf_counter()
    with state.open() as memory, progress_bar("rebuilding", as_json=state.as_json) as progress:
        done = memory.rebuild(progress=progress)
    seconds = time.perf_counter() - started
    state.say(
        {
            "events": done.events,
            "batches": done.batches,
            "position": done.position,
            "seconds": round(seconds, 3),
        },
        f"rebuilt the read models: {done.events} events applied in {seconds:.2f} s "
        f"(position {done.position})",
    )


@click.command()
@pass_state
def stats(state: State) -> None:
    """Counts and sizes: events, log and read-model bytes, projection lag, entities, facts.

    Example: apexmem --json stats
    """
    from apexmem.cli.render import console, emit_json, stats_table

    with state.open() as memory:
        found = memory.stats()
    if state.as_json:
        emit_json(found)
    else:
        console.print(stats_table(found))
