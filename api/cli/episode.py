"""`apexmem episode`: the messages of one conversation."""

from __future__ import annotations

from datetime import datetime

import click

from apexmem.cli.params import to_time
from apexmem.cli.state import State, pass_state

__all__ = ["episode"]


@click.command()
@click.argument("conversation")
@click.option(
    "--known-at",
    callback=to_time,
    metavar="TIME",
    help="Only the messages the memory had been told by then (ISO 8601 with a zone).",
)
@pass_state
def episode(state: State, *, conversation: str, known_at: datetime | None) -> None:
    """The messages of one conversation (episode), oldest first: speaker, text, time,
    log position and chain hash.

    Example: apexmem episode conv-7
    """
    from apexmem.cli.render import console, emit_json, history_table
    from apexmem.operations import episode as messages_of
    from apexmem.wire import EpisodeIn

    with state.open() as memory:
        found = messages_of(memory, EpisodeIn(conversation=conversation, known_at=known_at))
    if state.as_json:
        emit_json(found.events)
    elif found.events:
        console.print(history_table(found.events, f"episode {conversation}"))
    else:
        console.print(f"no message of {conversation}")
