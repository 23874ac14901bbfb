"""`apexmem migrate`: carry a memory's log to another backend (a directory or a database)."""

from __future__ import annotations

import shutil
import time

import click

from apexmem.cli.progress import progress_bar
from apexmem.cli.state import State, existing_memory, pass_state, usable_directory
from apexmem.config import SETTINGS_FILE, holds_memory, load_settings
from apexmem.events.errors import ValidationError
from apexmem.location import Location

__all__ = ["migrate"]


@click.command()
@click.option(
    "--from", "source", required=True, metavar="DIR|URL", help="The memory to copy (kept)."
)
@click.option(
    "--to",
    "target",
    required=True,
    metavar="DIR|URL",
    help="A new memory: an absent or empty directory, or a PostgreSQL schema without one.",
)
@pass_state
def migrate(state: State, source: str, target: str) -> None:
    """Copy a memory's log to another place, verify it there, and project its read models.

    The log is verified before it is copied and again on arrival, where it must end in the
    same chain hash; records, chain hashes, transaction times and idempotency keys are
    copied as stored, so history, as-of answers and retried writes are the same. Stop the
    source's writers first. Works in both directions, so a memory can go to PostgreSQL
    and come home again.

    Example: apexmem migrate --from ./mem --to postgresql://app@db.internal/memory
    """
    from apexmem.composition import open_log
    from apexmem.memory import Memory
    from apexmem.replay.migrate import migrate as copy

    started = time.perf_counter()
    origin = existing_memory(state.location(source))
    destination = _new_memory(state.location(target))
    settings = load_settings(origin.directory)
    source_log = open_log(origin, settings=settings, create=False)
    target_log = open_log(destination, settings=settings)
    try:
        done = copy(source_log, target_log)
    finally:
        source_log.close()
        target_log.close()
    if not origin.on_postgres and (origin.directory / SETTINGS_FILE).exists():
        destination.directory.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(origin.directory / SETTINGS_FILE, destination.directory / SETTINGS_FILE)
    with (
        Memory.open(destination, settings=settings) as memory,
        progress_bar("projecting", as_json=state.as_json) as progress,
    ):
        projected = memory.project(progress=progress)
    seconds = time.perf_counter() - started
    state.say(
        {
            "from": str(origin),
            "to": str(destination),
            "events": done.events,
            "idempotency_keys": done.keys,
            "head_position": done.head_position,
            "head": done.head,
            "projected_position": projected.position,
            "seconds": round(seconds, 3),
        },
        f"copied {done.events} events and {done.keys} idempotency keys to {destination}; "
        f"verified there, head {done.head_position}:{done.head}; projected in {seconds:.2f} s",
    )


def _new_memory(location: Location) -> Location:
    """`location` if it holds no memory yet (a directory also holds nothing else)."""
    if not location.on_postgres:
        directory = location.directory
        if directory.is_dir() and any(directory.iterdir()):
            raise ValidationError("--to", str(directory), "is not empty; migrate never overwrites")
        usable_directory(directory)
    elif holds_memory(location):
        raise ValidationError("--to", str(location), "already holds a memory; name a new schema")
    return location
