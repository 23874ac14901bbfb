"""`apexmem timeline`: every version of one of an entity's relations, as a table or an SVG."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from apexmem.cli.params import to_time
from apexmem.cli.state import State, no_entity, pass_state
from apexmem.events.errors import ValidationError

__all__ = ["timeline"]


@click.command()
@click.argument("name")
@click.option("--relation", required=True, metavar="RELATION", help="The relation (works_at, ...).")
@click.option(
    "--svg",
    "svg_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    metavar="FILE",
    help="Write the bitemporal picture (one bar per version) to FILE instead of a table.",
)
@click.option("--known-at", callback=to_time, metavar="TIME", help="As the store knew it then.")
@click.option(
    "--position", type=int, metavar="N", help="As the store knew it at this log position."
)
@click.option("--valid-at", callback=to_time, metavar="TIME", help="Mark this valid time.")
@pass_state
def timeline(
    state: State,
    *,
    name: str,
    relation: str,
    svg_path: Path | None,
    known_at: datetime | None,
    position: int | None,
    valid_at: datetime | None,
) -> None:
    """Every version of NAME's RELATION: superseded, closed, outranked and withdrawn ones too.

    With --svg, the bitemporal picture: one bar per version, valid time across and known
    time down, so a late correction (valid long ago, told last week) stands out; for docs
    and tickets. Exit status 1 when no entity answers to NAME.

    Example: apexmem timeline Alice --relation works_at --svg alice-works-at.svg
    """
    from apexmem.bitemporal import timeline_svg
    from apexmem.cli.render import console, emit_json, fact_rows_table

    with state.open() as memory:
        view = memory.as_of(known_at=known_at, position=position)
        if not view.entities(name, limit=1):
            no_entity(name, None, view.known_at)
        rows = view.edge_history(subject=name, relation=relation)
        now = view.known_at or memory.clock()
    if svg_path is not None:
        picture = timeline_svg(rows, title=f"{name} {relation}", now=now, valid_at=valid_at)
        try:
            svg_path.write_text(picture + "\n", encoding="utf-8")
        except OSError as e:
            raise ValidationError(
                "--svg", str(svg_path), f"cannot be written ({e.strerror})"
            ) from e
        state.say(
            {"svg": str(svg_path), "versions": len(rows)},
            f"{len(rows)} version{'' if len(rows) == 1 else 's'} of {name} {relation} "
            f"drawn in {svg_path}",
        )
    elif state.as_json:
        emit_json(rows)
    else:
        console.print(fact_rows_table(rows, f"versions of {name} {relation}"))
