"""`apexmem recall`: what the memory would hand an agent for a question."""

from __future__ import annotations

from datetime import datetime

import click

from apexmem.cli.params import COUNT, COUNT_OR_ZERO, to_list, to_time, to_window
from apexmem.cli.state import State, pass_state

__all__ = ["recall"]


@click.command()
@click.argument("query")
@click.option(
    "--limit", type=COUNT, help="At most this many (default: [memory.graph] recall_limit, 10)."
)
@click.option(
    "--hops",
    type=COUNT_OR_ZERO,
    help="Graph hops at most (default: [memory.graph] max_hops, 2; spreading_activation "
    "max_hops, 3, with --mode activation).",
)
@click.option(
    "--types",
    "edge_types",
    callback=to_list,
    metavar="TYPE,TYPE",
    default=None,
    help="Only facts of these edge types: semantic, temporal, causal, entity (comma-separated), "
    "or all (default: the graph walks the types the question's keywords point to).",
)
@click.option(
    "--mode",
    type=click.Choice(["bfs", "activation"]),
    help="Graph expansion: breadth-first, or spreading activation (default: activation when "
    "[memory.graph.spreading_activation] enabled, else bfs).",
)
@click.option("--valid-at", callback=to_time, metavar="TIME", help="Recall the world at this time.")
@click.option("--known-at", callback=to_time, metavar="TIME", help="Recall what was known then.")
@click.option(
    "--position",
    type=int,
    metavar="N",
    help="Recall what was known at this log position (instead of --known-at).",
)
@click.option(
    "--window",
    callback=to_window,
    metavar="START,END",
    help="Recall the facts valid at some time between these two times (default: the time the "
    'question names, as "in 2019" or "last summer", if any).',
)
@click.option(
    "--reference-time",
    callback=to_time,
    metavar="TIME",
    help='What relative times in the question ("last summer") count from (default: now).',
)
@click.option(
    "--include-faded",
    is_flag=True,
    help="Also facts whose decayed confidence fell under 0.1 (left out by default).",
)
@click.option(
    "--context",
    "budget",
    type=click.IntRange(min=1),
    metavar="CHARS",
    help="Print the hits as prompt lines within CHARS characters instead of a table.",
)
@click.option(
    "--trace",
    is_flag=True,
    help="Also print each stage of the recall (full text, vector, seeds, expansion, fact "
    "links, context, fusion): its best candidates with their scores, and its milliseconds "
    '(with --json: the "trace" field).',
)
@pass_state
def recall(
    state: State,
    *,
    query: str,
    limit: int | None,
    hops: int | None,
    edge_types: tuple[str, ...] | None,
    mode: str | None,
    valid_at: datetime | None,
    known_at: datetime | None,
    position: int | None,
    reference_time: datetime | None,
    window: tuple[datetime, datetime] | None,
    include_faded: bool,
    budget: int | None,
    trace: bool,
) -> None:
    """The facts and messages that best answer QUERY, best first, with why and where from.

    Limit, hops and mode default to the memory's apexmem.toml, as in Python.

    Example: apexmem recall "What technologies does Alice's team use?" --hops 2 --trace
    """
    from apexmem.cli.render import console, emit_json, recall_table
    from apexmem.cli.trace import trace_tables

    with state.open() as memory:
        found = memory.recall(
            query,
            limit=limit,
            max_hops=hops,
            edge_types=_types(edge_types),
            mode=mode,
            valid_at=valid_at,
            known_at=known_at,
            position=position,
            reference_time=reference_time,
            window=window,
            include_faded=include_faded,
            trace=trace,
        )
        context = None if budget is None else memory.format_context(found, budget_chars=budget)
    if state.as_json:
        emit_json(found)
    elif context is not None:
        click.echo(context)
    else:
        console.print(recall_table(found, f"recall: {query}"))
    if found.trace is not None and not state.as_json:
        for table in trace_tables(found.trace):
            console.print(table)


def _types(given: tuple[str, ...] | None) -> list[str] | None:
    if not given:
        return None
    return [] if given == ("all",) else list(given)
