"""Merges and note linking on the command line: `apexmem merges`, `apexmem link-notes`."""

from __future__ import annotations

import click
from rich.table import Table

from apexmem.cli.params import COUNT
from apexmem.cli.state import State, pass_state
from apexmem.service.merging import MergeRow

__all__ = ["link_notes", "merges"]


@click.command()
@click.option(
    "--apart",
    is_flag=True,
    help="Also list the ambiguous pairs resolution by similarity kept apart.",
)
@click.option("--limit", default=100, show_default=True, type=COUNT, help="At most this many.")
@pass_state
def merges(state: State, *, apart: bool, limit: int) -> None:
    """Entities merged into others, oldest first: by hand, or by similarity of names.

    A merge by similarity shows its cosine and its judge (`threshold`, or the
    disambiguator's name). --apart adds the pairs judged different (by default every
    ambiguous pair of `use_embedding_resolution`): merge one by hand with
    `apexmem merge SOURCE TARGET` if they are the same.

    Example: apexmem merges --apart
    """
    from apexmem.cli.render import console, emit_json

    with state.open() as memory:
        rows = memory.merges(apart=apart, limit=limit)
    if state.as_json:
        emit_json(rows)
    elif rows:
        console.print(merges_table(rows))
    else:
        console.print("no merges")


@click.command(name="link-notes")
@pass_state
def link_notes(state: State) -> None:
    """Link entities first seen since the last pass to similar ones (`similar_to` facts).

    A-MEM note linking: pairs at or above [memory.graph.note_linking]
    similarity_threshold, at most top_k per entity, each a semantic fact whose
    confidence is the cosine. Runs after every write when note_linking is enabled.

    Example: apexmem link-notes
    """
    with state.open() as memory:
        done = memory.link_notes()
    state.say(
        done,
        f"linked {done.entities} new entities: {done.links} similar_to facts "
        f"(log read up to position {done.through})",
    )


def merges_table(rows: list[MergeRow]) -> Table:
    """Merges as a table: who, merged into (or kept apart from) whom, when, and the verdict."""
    table = Table(title="merges")
    for column in ("entity", "type", "verdict", "other", "score", "judge", "at"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            row.name,
            row.entity_type,
            row.verdict,
            row.target,
            "" if row.score is None else f"{row.score:.3f}",
            row.judge or "by hand",
            row.at.strftime("%Y-%m-%d %H:%M"),
        )
    return table
