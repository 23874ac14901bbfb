"""`apexmem status`: counts, lags behind the log, the settings that matter, versions."""

from __future__ import annotations

import click
import msgspec
from rich.table import Table

from apexmem.cli.state import State, pass_state
from apexmem.service.status import Status

__all__ = ["status", "status_table"]


@click.command()
@pass_state
def status(state: State) -> None:
    """What the memory holds (counts), how far each projection is behind the log (lags),
    the settings that shape recall and decay, and versions; never data (no fact text, no
    names).

    Example: apexmem --json status
    """
    from apexmem.cli.render import console, emit_json

    with state.open() as memory:
        found = memory.status()
    if state.as_json:
        emit_json(found)
    else:
        console.print(status_table(found))


def status_table(found: Status) -> Table:
    """One row per figure, grouped by section (counts, lags, settings, versions)."""
    table = Table(title="status", title_justify="left")
    for column in ("section", "name", "value"):
        table.add_column(column, overflow="fold")
    for section in ("counts", "lags", "settings", "versions"):
        values = msgspec.structs.asdict(getattr(found, section))
        for name, value in values.items():
            table.add_row(section, name.replace("_", " "), _shown(value))
    return table


def _shown(value: object) -> str:
    if value is None:
        return "-"
    return str(value).lower() if isinstance(value, bool) else str(value)
