"""Going back in time: `apexmem replay` into a read-only copy, `apexmem diff` of two moments."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import click

from apexmem.cli.params import to_position_or_time, to_time
from apexmem.cli.progress import progress_bar
from apexmem.cli.state import State, pass_state
from apexmem.config import REPLAY_FILE
from apexmem.events.errors import ValidationError

__all__ = ["diff", "replay"]


@click.command()
@click.option(
    "--until",
    required=True,
    callback=to_position_or_time,
    metavar="POSITION|TIME",
    help="A time (the log as recorded by then) or a plain integer log position.",
)
@click.option(
    "--into",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="A new or empty directory; replay never overwrites.",
)
@pass_state
def replay(state: State, until: int | datetime, into: Path) -> None:
    """Fold the log up to a past moment into a new, read-only memory directory.

    The new directory holds the log up to that moment (it verifies and answers history)
    and read models projected from it; point --db at it to ask what was known then.

    Example: apexmem replay --until 2025-01-01T00:00:00Z --into ./mem-2025
    """
    with state.open() as memory, progress_bar("replaying", as_json=state.as_json) as progress:
        try:
            with memory.replay(until=until, into=into, progress=progress):
                pass
        except OSError as e:  # the new directory or a file in it could not be made
            raise ValidationError("--into", str(into), f"cannot be written ({e.strerror})") from e
    marker = json.loads((into / REPLAY_FILE).read_text(encoding="utf-8"))
    report = {"directory": str(into), **marker}
    moment = "" if isinstance(until, int) else f", as recorded by {marker['until']}"
    state.say(
        report,
        f"replayed {marker['events']} events (the log up to position {marker['position']}"
        f"{moment}) into {into}; it is read-only",
    )


@click.command()
@click.argument("since", callback=to_time)
@click.argument("until", callback=to_time)
@pass_state
def diff(state: State, since: datetime, until: datetime) -> None:
    """Facts asserted, superseded, retracted, faded and restored, and links told between
    facts, after SINCE and up to UNTIL (recorded times); fades are those `apexmem decay`
    passes recorded.

    Example: apexmem diff 2025-01-01T00:00:00Z 2025-06-01T00:00:00Z
    """
    from apexmem.cli.render import console, diff_table, emit_json

    with state.open() as memory:
        changes = memory.diff(since, until)
    if state.as_json:
        emit_json(changes)
        return
    console.print(diff_table(changes))
    console.print(
        f"{len(changes.asserted)} asserted, {len(changes.superseded)} superseded, "
        f"{len(changes.retracted)} retracted, {len(changes.faded)} faded, "
        f"{len(changes.restored)} restored, {len(changes.linked)} linked",
    )
