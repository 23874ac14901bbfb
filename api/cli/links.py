"""`apexmem link` and `apexmem fact-graph`: typed links between facts (seed 004)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
import msgspec

from apexmem.cli.state import State, pass_state
from apexmem.events.errors import ValidationError

if TYPE_CHECKING:
    from uuid import UUID

    from apexmem.readmodels.rows import FactRow

__all__ = ["fact_graph", "link"]

_ARROWS = {"out": "->", "in": "<-"}


@click.command()
@click.argument("source", metavar="SOURCE")
@click.argument("target", metavar="TARGET")
@click.option(
    "--type",
    "link_type",
    required=True,
    metavar="TYPE",
    help="supersedes, caused_by, part_of, related_to or depends_on (any case).",
)
@click.option(
    "--strength",
    type=float,
    default=1.0,
    show_default=True,
    help="How strong the link is: above 0, at most 1.",
)
@click.option("--actor", metavar="WHO", help="Who links them (kept with the event).")
@pass_state
def link(
    state: State,
    source: str,
    target: str,
    *,
    link_type: str,
    strength: float,
    actor: str | None,
) -> None:
    """Link fact SOURCE to fact TARGET: SOURCE supersedes, is caused by, is part of, is
    related to or depends on TARGET. One event (fact-linked.v1); the same link again
    with the same strength writes nothing, with another strength it is told anew.
    Recall then brings each fact with the other. Ids are whole or short (f91955cd:3);
    one that names no fact exits 1, a bad type or strength 2, nothing written.

    Example: apexmem link f91955cd:1 0b7a4c11:2 --type caused_by --strength 0.8
    """
    from apexmem.cli.ids import resolve_fact, short_fact

    with state.open() as memory:
        ends = resolve_fact(memory, source, "SOURCE"), resolve_fact(memory, target, "TARGET")
        try:
            done = memory.link(*ends, link_type, strength, actor=actor)
        except ValidationError as e:
            named = {"link_type": "--type", "strength": "--strength", "target": "TARGET"}
            raise ValidationError(named.get(e.field, e.field), e.value, e.rule) from e
        said = {f.fact_id: f.fact for f in memory.fact_graph(done.source).facts}
    state.say(
        done,
        f"{done.link_type.upper()} link from {short_fact(done.source)}"
        f" {said.get(done.source, '')!r} to {short_fact(done.target)}"
        f" {said.get(done.target, '')!r} (strength {done.strength:.2f}, position {done.position})",
    )


@click.command(name="fact-graph")
@click.argument("fact", metavar="FACT")
@click.option(
    "--depth",
    type=click.IntRange(1, 3),
    default=1,
    show_default=True,
    help="Links followed out from FACT (1 to 3).",
)
@pass_state
def fact_graph(state: State, fact: str, depth: int) -> None:
    """Show a fact's links both ways (type, strength, direction) and the facts they reach
    within --depth links.

    Example: apexmem fact-graph f91955cd:1 --depth 2
    """
    from apexmem.cli.ids import resolve_fact, short_fact
    from apexmem.cli.render import console, emit_json

    with state.open() as memory:
        graph = memory.fact_graph(resolve_fact(memory, fact, "FACT"), depth)
    direct = graph.direct()
    if state.as_json:
        emit_json(
            {
                "fact_id": graph.fact_id,
                "depth": graph.depth,
                "direct": [{"direction": d, **msgspec.structs.asdict(link)} for d, link in direct],
                "links": graph.links,
                "facts": graph.facts,
                "hops": graph.hops,
            }
        )
        return
    rows = {f.fact_id: f for f in graph.facts}
    console.print(f"Fact: {short_fact(graph.fact_id)} {_said(rows, graph.fact_id)}")
    console.print(f"Direct links ({len(direct)}):")
    for direction, found in direct:
        other = found.target if direction == "out" else found.source
        console.print(
            f"  {_ARROWS[direction]} [{found.link_type.upper()}] {short_fact(other)}"
            f" {_said(rows, other)} (strength {found.strength:.2f}, position {found.position})",
            markup=False,
        )
    console.print(f"Total connected facts (depth {graph.depth}): {len(graph.facts) - 1}")
    for reached in graph.facts[1:]:
        hops = graph.hops[reached.fact_id]
        console.print(
            f"  {hops} link{'s' if hops > 1 else ''} away: {short_fact(reached.fact_id)}"
            f" {reached.fact}",
            markup=False,
        )


def _said(rows: dict[UUID, FactRow], fact_id: UUID) -> str:
    found = rows.get(fact_id)
    return found.fact if found is not None else "(not known)"
