"""`apexmem forget`: erase an entity or a conversation, keeping a verifiable history."""

from __future__ import annotations

import click

from apexmem.cli.state import State, pass_state
from apexmem.domain.types import ENTITY_TYPES

__all__ = ["forget"]


@click.command()
@click.option("--entity", help="The name (or an alias) of the entity to erase.")
@click.option(
    "--type",
    "entity_type",
    type=click.Choice(ENTITY_TYPES),
    help="The entity's type, needed when the name belongs to entities of several types.",
)
@click.option("--episode", help="The conversation to erase (the name it was recorded under).")
@click.option(
    "--reason", help="Why (required; recorded in the erasure event, keep it free of personal data)."
)
@click.option("--actor", help="Who asked (recorded in the erasure event).")
@pass_state
def forget(
    state: State,
    *,
    entity: str | None,
    entity_type: str | None,
    episode: str | None,
    reason: str | None,
    actor: str | None,
) -> None:
    """Erase an entity (its names, facts, the messages that mention it) or a conversation
    from every view and every file of the memory; `apexmem verify` still passes and
    `apexmem history` shows where records were erased, when and why (the erasure is an
    event of its own). Forgetting twice does nothing the second time. SQLite memories only
    for now. See docs/explanation/erasure.md.

    Example: apexmem forget --entity "Priya Shah" --type person --reason "erasure request #123"
    """
    from apexmem.cli.render import console, emit_json

    with state.open() as memory:
        report = memory.forget(
            entity=entity, entity_type=entity_type, episode=episode, reason=reason, actor=actor
        )
    if state.as_json:
        emit_json(report)
        return
    if report.position is None:
        console.print("nothing left to erase (forgotten before)")
        return
    console.print(
        f"erased {report.erased} records ({report.entities} entities, {report.facts} fact "
        f"versions, {report.messages} messages); erasure event at position {report.position}"
    )
