"""`apexmem alias` and `apexmem merge`: another name for an entity, or one entity merged
forward into another, from a shell without writing JSON lines.

Both go through the same commands as `ingest` and the Python API; a refused value is
reported under the argument or option that gave it (`--type`), and nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Final

import click

from apexmem.cli.state import State, pass_state
from apexmem.domain.types import ENTITY_TYPES
from apexmem.events.errors import NotFoundError, ValidationError

__all__ = ["alias", "merge"]

_TYPE: Final = click.Choice(ENTITY_TYPES)
"""Strict: the library reads an unknown entity type as `concept`, a shell typo should fail."""
_ALIAS_OPTIONS: Final = {
    "entity": "NAME",
    "alias": "ALIAS",
    "entity_type": "--type",
    "episode": "--episode",
    "actor": "--actor",
}
_MERGE_OPTIONS: Final = {
    "source": "SOURCE",
    "target": "TARGET",
    "entity_type": "--type",
    "reason": "--reason",
    "episode": "--episode",
    "actor": "--actor",
}


@contextmanager
def _named_by(options: Mapping[str, str]) -> Iterator[None]:
    """Re-raise a ValidationError under the argument's or option's name, not the field's."""
    try:
        yield
    except ValidationError as e:
        named = options.get(e.field)
        if named is None:
            raise
        raise ValidationError(named, e.value, e.rule) from e


@click.command()
@click.argument("name")
@click.argument("other", metavar="ALIAS")
@click.option("--type", "entity_type", type=_TYPE, default="concept", show_default=True,
              metavar="TYPE", help="The entity's type: person, organization, ...")  # fmt: skip
@click.option("--episode", metavar="NAME", help="The conversation or source it came from.")
@click.option("--actor", metavar="WHO", help="Who claims it (kept with the event).")
@pass_state
def alias(
    state: State,
    *,
    name: str,
    other: str,
    entity_type: str,
    episode: str | None,
    actor: str | None,
) -> None:
    """Claim ALIAS as another name of the entity NAME (of --type): it then resolves to that
    entity everywhere (queries, recall, new facts). The first claim of a name wins: an ALIAS
    another entity owns is refused and exits 1, and the same claim again writes nothing.

    Example: apexmem alias Acme "Acme Corp" --type organization
    """
    with state.open() as memory, _named_by(_ALIAS_OPTIONS):
        done = memory.add_alias(
            entity=name, alias=other, entity_type=entity_type, episode=episode, actor=actor
        )
    if done.outcome == "refused":
        raise NotFoundError(f"ALIAS: {other!r} already names another {entity_type} ({done.owner})")
    said = {"claimed": "claimed", "unchanged": "already claimed; nothing written"}[done.outcome]
    state.say(done, f"{done.alias!r} {said} (entity {done.entity_id})")


@click.command()
@click.argument("source")
@click.argument("target")
@click.option("--type", "entity_type", type=_TYPE, default="concept", show_default=True,
              metavar="TYPE", help="The type of both entities.")  # fmt: skip
@click.option("--reason", metavar="WHY", help="Why (kept with the event).")
@click.option("--episode", metavar="NAME", help="The conversation or source it came from.")
@click.option("--actor", metavar="WHO", help="Who merges them (kept with the event).")
@pass_state
def merge(
    state: State,
    *,
    source: str,
    target: str,
    entity_type: str,
    reason: str | None,
    episode: str | None,
    actor: str | None,
) -> None:
    """Merge the entity SOURCE forward into TARGET, both of --type: SOURCE's names (and
    aliases) resolve to TARGET from then on, its facts are found under TARGET, and the
    history keeps both. A name that names no entity exits 1; SOURCE and TARGET naming one
    entity exits 2. `apexmem merges` lists the merges made.

    Example: apexmem merge "ACME Inc" Acme --type organization --reason "same company"
    """
    with state.open() as memory, _named_by(_MERGE_OPTIONS):
        done = memory.merge(
            source=source,
            target=target,
            entity_type=entity_type,
            reason=reason,
            episode=episode,
            actor=actor,
        )
    state.say(done, f"{source!r} merged into {target!r} (entity {done.target_id})")
