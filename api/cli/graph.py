"""Graph upkeep on the command line: `apexmem communities` and `apexmem episodes`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import click
from rich.table import Table

from apexmem.cli.params import COUNT, COUNT_OR_ZERO, to_time
from apexmem.cli.state import State, no_entity, pass_state
from apexmem.domain.types import EDGE_TYPE_ALIASES, ENTITY_TYPES, parse_edge_type
from apexmem.events.base import EDGE_TYPES
from apexmem.readmodels import CommunityRow, EpisodeRow

__all__ = ["communities", "decay_rate", "episodes"]


@click.command()
@click.option("--detect", is_flag=True, help="Run label propagation first and record what changed.")
@click.option(
    "--assign",
    is_flag=True,
    help="First place entities in no community by their neighbours' votes (between detections).",
)
@click.option("--limit", default=50, show_default=True, type=COUNT, help="At most this many.")
@click.option(
    "--top",
    default=5,
    show_default=True,
    type=COUNT_OR_ZERO,
    help="Members shown per community, best connected first.",
)
@pass_state
def communities(state: State, *, detect: bool, assign: bool, limit: int, top: int) -> None:
    """Communities of the graph, largest first: size, recorded summary, top members.

    --detect runs a detection (only new or changed communities are summarized; each
    formation, summary and dissolution is an event); --assign places new entities by
    neighbour vote. Both print what they did before the list (under --json: an object
    with "detection", "assignment" and "communities").

    Example: apexmem communities --detect --top 3
    """
    from apexmem.cli.render import console, emit_json

    with state.open() as memory:
        detection = memory.detect_communities() if detect else None
        assignment = memory.assign_communities() if assign else None
        rows = memory.communities(limit=limit, top=top)
    if state.as_json:
        if detect or assign:
            emit_json({"detection": detection, "assignment": assignment, "communities": rows})
        else:
            emit_json(rows)
        return
    if detection is not None:
        console.print(
            f"detected {detection.communities} communities over {detection.entities} entities "
            f"and {detection.edges} edges: {detection.formed} formed and summarized "
            f"({detection.summarizer}), {detection.unchanged} unchanged, "
            f"{detection.dissolved} dissolved",
        )
    if assignment is not None:
        console.print(f"assigned {len(assignment.placed)} entities by vote")
    if rows:
        console.print(communities_table(rows))
    else:
        console.print("no communities (run `apexmem communities --detect`)")


@click.command()
@click.argument("name")
@click.option(
    "--type",
    "entity_type",
    type=click.Choice(ENTITY_TYPES),
    metavar="TYPE",
    help="Only entities of this type (person, organization, tool, ...).",
)
@click.option(
    "--known-at", callback=to_time, metavar="TIME", help="As the store knew it at this time."
)
@click.option(
    "--position", type=int, metavar="N", help="As the store knew it at this log position."
)
@pass_state
def episodes(
    state: State,
    *,
    name: str,
    entity_type: str | None,
    known_at: datetime | None,
    position: int | None,
) -> None:
    """The episodes (conversations) that mentioned an entity, first mentioned first.

    NAME is matched exactly (any case, aliases too), else as a prefix. Exit status 1
    when no entity answers to it.

    Example: apexmem episodes Alice --type person
    """
    from apexmem.cli.render import console, emit_json

    with state.open() as memory:
        view = memory.as_of(known_at=known_at, position=position)
        if not view.entities(name, entity_type=entity_type, limit=1):
            no_entity(name, entity_type, view.known_at)
        rows = view.episodes_for(name, entity_type=entity_type)
    if state.as_json:
        emit_json(rows)
    elif rows:
        console.print(episodes_table(rows, f"episodes that mentioned {name}"))
    else:
        console.print(f"no episode mentioned {name}")


@click.command(name="decay-rate")
@click.option(
    "--edge-type",
    type=click.Choice((*EDGE_TYPES, *EDGE_TYPE_ALIASES)),
    callback=lambda _ctx, _param, value: _edge_type(value),
    metavar="TYPE",
    help="The edge type to set: semantic, temporal, causal or entity (hierarchical and "
    "co_occurrence are aliases of entity and semantic, as in the Python API).",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=0.0, max=10.0),
    metavar="PER_DAY",
    help="Its new rate: confidence(t) = c0 * exp(-rate * days since last observed).",
)
@pass_state
def decay_rate(state: State, *, edge_type: str | None, rate: float | None) -> None:
    """Set the confidence decay rate of one edge type (a policy event), then show every rate.

    Without options it only shows the rates in force: the last set for each edge type,
    else `[memory.graph] default_decay_rate` (0.01 per day). Setting a rate creates the
    memory if it is absent; only showing them does not.

    Example: apexmem decay-rate --edge-type temporal --rate 0.02
    """
    from apexmem.cli.render import console, emit_json

    if (edge_type is None) != (rate is None):
        raise click.UsageError("give both --edge-type and --rate, or neither")
    with state.open(create=rate is not None) as memory:
        if edge_type is not None and rate is not None:
            memory.set_decay_rate(edge_type, rate)
        rates = memory.decay_rates()
    if state.as_json:
        emit_json(rates)
        return
    table = Table(title="confidence decay per day", title_justify="left")
    table.add_column("edge type")
    table.add_column("rate", justify="right")
    for name, value in rates.items():
        table.add_row(name, f"{value:g}")
    console.print(table)


def _edge_type(value: str | None) -> str | None:
    """The edge type an alias stands for, by the API's own rule (`set_decay_rate` takes both)."""
    return None if value is None else parse_edge_type(value, "--edge-type")


def communities_table(rows: Sequence[CommunityRow]) -> Table:
    """Communities with their size, summary and best-connected members."""
    from apexmem.cli.render import short

    table = Table(title="communities", title_justify="left")
    for column in ("name", "size", "summary", "top members", "id"):
        table.add_column(column, overflow="fold")
    for r in rows:
        members = ", ".join(f"{m.name} ({m.degree})" for m in r.top_members)
        summary = r.summary + (" (stale: members assigned since)" if r.stale else "")
        table.add_row(r.name, str(r.size), summary, members, short(r.community_id))
    return table


def episodes_table(rows: Sequence[EpisodeRow], title: str) -> Table:
    """Episodes with when they started, when they first mentioned the entity, their messages."""
    from apexmem.cli.render import moment, short

    table = Table(title=title, title_justify="left")
    for column in ("conversation", "started", "first mention", "messages", "id"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(
            r.conversation,
            moment(r.started_at),
            moment(r.mentioned_at),
            str(r.messages),
            short(r.episode_id),
        )
    return table
