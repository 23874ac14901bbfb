"""Questions on both time axes: `apexmem facts`, `apexmem entities`, `apexmem traverse`."""

from __future__ import annotations

from datetime import datetime

import click

from apexmem.cli.params import COUNT, COUNT_OR_ZERO, to_list, to_time
from apexmem.cli.state import State, no_entity, pass_state
from apexmem.domain.types import ENTITY_TYPES

__all__ = ["entities", "facts", "traverse"]

_VALID_AT = "Valid in the world at this time (default: current facts, valid now or at --known-at)."
_KNOWN_AT = "As the store knew it at this time (default: now)."
_POSITION = "As the store knew it at this log position (instead of --known-at)."
_TYPE = click.Choice(ENTITY_TYPES)
_TYPE_HELP = "Only entities of this type (person, organization, tool, ...)."
_FADED = "Also facts whose decayed confidence fell under 0.1 (left out by default)."


@click.command()
@click.argument("name")
@click.option("--valid-at", callback=to_time, metavar="TIME", help=_VALID_AT)
@click.option("--known-at", callback=to_time, metavar="TIME", help=_KNOWN_AT)
@click.option("--position", type=int, metavar="N", help=_POSITION)
@click.option("--type", "entity_type", type=_TYPE, metavar="TYPE", help=_TYPE_HELP)
@click.option("--include-faded", is_flag=True, help=_FADED)
@pass_state
def facts(
    state: State,
    *,
    name: str,
    valid_at: datetime | None,
    known_at: datetime | None,
    position: int | None,
    entity_type: str | None,
    include_faded: bool,
) -> None:
    """Believed facts about an entity (as subject or object), on both time axes.

    NAME is matched exactly (any case, aliases too), else as a prefix. Exit status 1
    when no entity answers to it.

    Example: apexmem facts Alice --valid-at 2024-06-01T00:00:00Z --known-at 2025-01-01T00:00:00Z
    """
    from apexmem.cli.render import console, emit_json, fact_rows_table

    with state.open() as memory:
        view = memory.as_of(known_at=known_at, position=position)
        if not view.entities(name, entity_type=entity_type, limit=1):
            no_entity(name, entity_type, known_at)
        rows = view.facts_about(
            name, valid_at=valid_at, entity_type=entity_type, include_faded=include_faded
        )
    if state.as_json:
        emit_json(rows)
    elif rows:
        console.print(fact_rows_table(rows, f"facts about {name}{_when(valid_at, known_at)}"))
    else:
        console.print(f"no facts about {name}{_when(valid_at, known_at)}")


@click.command()
@click.argument("query", required=False)
@click.option("--type", "entity_type", type=_TYPE, metavar="TYPE", help=_TYPE_HELP)
@click.option("--known-at", callback=to_time, metavar="TIME", help=_KNOWN_AT)
@click.option("--position", type=int, metavar="N", help=_POSITION)
@click.option("--limit", default=50, show_default=True, type=COUNT, help="At most this many.")
@pass_state
def entities(
    state: State,
    *,
    query: str | None,
    entity_type: str | None,
    known_at: datetime | None,
    position: int | None,
    limit: int,
) -> None:
    """Entities named QUERY (exact, else prefix), or every entity in name order.

    Example: apexmem entities ali --type person
    """
    from apexmem.cli.render import console, emit_json, entities_table

    with state.open() as memory:
        view = memory.as_of(known_at=known_at, position=position)
        rows = view.entities(query, entity_type=entity_type, limit=limit)
    if state.as_json:
        emit_json(rows)
        return
    title = "entities" if query is None else f"entities matching {query!r}"
    console.print(entities_table(rows, title + _when(None, known_at)))


@click.command()
@click.argument("name")
@click.option("--hops", default=2, show_default=True, type=COUNT_OR_ZERO, help="Hops at most.")
@click.option(
    "--types",
    "edge_types",
    callback=to_list,
    metavar="TYPE,TYPE",
    default="",
    help="Only edges of these types: semantic, temporal, causal, entity (comma-separated).",
)
@click.option("--valid-at", callback=to_time, metavar="TIME", help=_VALID_AT)
@click.option("--known-at", callback=to_time, metavar="TIME", help=_KNOWN_AT)
@click.option("--position", type=int, metavar="N", help=_POSITION)
@click.option("--include-faded", is_flag=True, help=_FADED)
@pass_state
def traverse(
    state: State,
    *,
    name: str,
    hops: int,
    edge_types: tuple[str, ...],
    valid_at: datetime | None,
    known_at: datetime | None,
    position: int | None,
    include_faded: bool,
) -> None:
    """Entities within --hops of NAME over believed edges, and the edges between them.

    Example: apexmem traverse Alice --hops 2 --types causal,semantic
    """
    from apexmem.cli.render import console, emit_json, fact_rows_table, reached_table

    with state.open() as memory:
        view = memory.as_of(known_at=known_at, position=position)
        found = view.traverse(
            name,
            max_hops=hops,
            edge_types=edge_types,
            valid_at=valid_at,
            include_faded=include_faded,
        )
    if not found.entities:  # the start itself is always reached (hop 0) when it exists
        no_entity(name, known_at=known_at)
    if state.as_json:
        emit_json(found)
        return
    when = _when(valid_at, known_at)
    console.print(reached_table(found.entities, f"within {hops} hops of {name}{when}"))
    console.print(fact_rows_table(found.facts, "edges"))


def _when(valid_at: datetime | None, known_at: datetime | None) -> str:
    from apexmem.cli.render import moment

    parts = []
    if valid_at is not None:
        parts.append(f"valid at {moment(valid_at)}")
    if known_at is not None:
        parts.append(f"known at {moment(known_at)}")
    return f" ({', '.join(parts)})" if parts else ""
