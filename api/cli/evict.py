"""`apexmem evict`: archive expired versions, orphan entities and entities past the cap."""

from __future__ import annotations

import click

from apexmem.cli.params import COUNT_OR_ZERO
from apexmem.cli.state import State, pass_state

__all__ = ["evict"]


@click.command()
@click.option("--dry-run", is_flag=True, help="List what would be archived; append nothing.")
@click.option(
    "--show",
    default=20,
    show_default=True,
    type=COUNT_OR_ZERO,
    help="Fact versions and entities listed at most (each); the counts are always complete.",
)
@pass_state
def evict(state: State, *, dry_run: bool, show: int) -> None:
    """Archive what the seeds' graph eviction removes, one archive event each.

    Fact versions that ended more than [memory.graph] expired_edge_retention_days ago,
    entities with no active fact not seen for as long, and, past max_entities, the
    entities with the fewest active facts (then the least recently seen) with their
    facts. Nothing is deleted: the log and `apexmem history` keep all of it, and views of
    earlier moments (--known-at) still show it. Under --json every item is listed.

    Example: apexmem evict --dry-run
    """
    from apexmem.cli.render import console, emit_json

    with state.open() as memory:
        report = memory.evict(dry_run=dry_run)
    if state.as_json:
        emit_json(report)
        return
    verb = "would archive" if dry_run else "archived"
    console.print(
        f"{verb}: {report.expired} expired fact versions, {report.orphans} orphan entities, "
        f"{report.capped} past max_entities (entities and their facts)",
    )
    for fact in report.facts[:show]:
        console.print(f"  fact {fact.fact_id}  {fact.fact}  ({fact.reason})")
    for entity in report.entities[:show]:
        console.print(f"  entity {entity.name} ({entity.entity_type})  ({entity.reason})")
    hidden = max(len(report.facts) - show, 0) + max(len(report.entities) - show, 0)
    if hidden:
        console.print(f"  ... and {hidden} more (--show N, or --json for all)")
