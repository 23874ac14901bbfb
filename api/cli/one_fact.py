"""`apexmem assert` and `apexmem retract`: one fact from a shell, without writing JSON lines.

Both go through the same commands as `ingest` and the Python API, so the same rules hold;
a refused value is reported under the option that gave it (`--valid-until`), and nothing
is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Final

import click

from apexmem.cli.params import to_time
from apexmem.cli.state import State, pass_state
from apexmem.domain.types import ENTITY_TYPES
from apexmem.events.errors import ValidationError

__all__ = ["assert_command", "retract"]

_OPTIONS: Final = {
    "subject": "SUBJECT",
    "relation": "RELATION",
    "object": "OBJECT",
    "value": "--value",
    "observed_at": "--observed-at",
    "ref": "--ref",
    "subject_type": "--subject-type",
    "object_type": "--object-type",
    "edge_type": "--edge-type",
    "confidence": "--confidence",
    "valid_from": "--valid-from",
    "valid_until": "--valid-until",
    "fact": "--fact",
    "episode": "--episode",
    "actor": "--actor",
    "reason": "--reason",
    "fact_id": "FACT_ID",
}
"""The option or argument each command field comes from, to name it in an error."""
_TYPE: Final = click.Choice(ENTITY_TYPES)
"""Strict: the library reads an unknown entity type as `concept`, a shell typo should fail."""


@contextmanager
def _named_by_option() -> Iterator[None]:
    """Re-raise a ValidationError under the option's name instead of the field's."""
    try:
        yield
    except ValidationError as e:
        named = _OPTIONS.get(e.field)
        if named is None:
            raise
        raise ValidationError(named, e.value, e.rule) from e


@click.command(name="assert")
@click.argument("subject")
@click.argument("relation")
@click.argument("object_", metavar="[OBJECT]", required=False)
@click.option("--value", metavar="TEXT", help="A literal value instead of OBJECT (41, blue, ...).")
@click.option("--subject-type", type=_TYPE, default="concept", show_default=True, metavar="TYPE",
              help="The subject's entity type: person, organization, tool, ...")  # fmt: skip
@click.option("--object-type", type=_TYPE, default="concept", show_default=True, metavar="TYPE",
              help="The object's entity type.")  # fmt: skip
@click.option("--edge-type", default="semantic", show_default=True, metavar="TYPE",
              help="semantic, temporal, causal or entity.")  # fmt: skip
@click.option("--confidence", type=float, default=1.0, show_default=True,
              help="How sure the source is, 0 to 1.")  # fmt: skip
@click.option("--valid-from", callback=to_time, metavar="TIME",
              help="When it became true (default: now).")  # fmt: skip
@click.option("--valid-until", callback=to_time, metavar="TIME",
              help="When it stopped being true (default: still true).")  # fmt: skip
@click.option("--fact", metavar="TEXT",
              help="The sentence (default: made from the names); alone, a note.")  # fmt: skip
@click.option("--observed-at", callback=to_time, metavar="TIME",
              help="When the source saw it (default: now).")  # fmt: skip
@click.option("--ref", metavar="REF", help="Where it came from (a message id, a URL, ...).")
@click.option("--episode", metavar="NAME", help="The conversation or source it came from.")
@click.option("--actor", metavar="WHO", help="Who asserts it (kept with the event).")
@pass_state
def assert_command(
    state: State,
    *,
    subject: str,
    relation: str,
    object_: str | None,
    value: str | None,
    subject_type: str,
    object_type: str,
    edge_type: str,
    confidence: float,
    valid_from: datetime | None,
    valid_until: datetime | None,
    fact: str | None,
    observed_at: datetime | None,
    ref: str | None,
    episode: str | None,
    actor: str | None,
) -> None:
    """Assert one fact: SUBJECT -RELATION-> OBJECT (an entity), or -> --value, or a note
    (--fact alone), as one atomic write; prints its id (short, as the tables print it)
    and what became of it (created, reinforced, superseded, historical). Bad input exits
    2 naming the option; nothing is written.

    Example: apexmem assert Alice works_at Acme --subject-type person
    --object-type organization --valid-from 2024-01-01T00:00:00Z
    """
    from apexmem.cli.ids import short_fact

    if object_ is None and value is None and fact is None:
        raise ValidationError(
            "OBJECT", None, "is missing: give OBJECT, --value TEXT, or --fact TEXT for a note"
        )
    with state.open(create=True) as memory, _named_by_option():
        done = memory.assert_fact(
            subject=subject,
            relation=relation,
            object=object_,
            value=value,
            subject_type=subject_type,
            object_type=object_type,
            edge_type=edge_type,
            confidence=confidence,
            valid_from=valid_from,
            valid_until=valid_until,
            fact=fact,
            observed_at=observed_at,
            ref=ref,
            episode=episode,
            actor=actor,
        )
    state.say(done, f"{short_fact(done.fact_id)} {done.outcome} (fact {done.fact_id})")


@click.command()
@click.argument("fact_id", metavar="FACT_ID")
@click.option("--reason", required=True, metavar="WHY", help="Why (kept with the event).")
@click.option("--valid-until", callback=to_time, metavar="TIME",
              help="End the fact here (default: withdraw it as never true).")  # fmt: skip
@click.option("--actor", metavar="WHO", help="Who retracts it (kept with the event).")
@pass_state
def retract(
    state: State, fact_id: str, reason: str, valid_until: datetime | None, actor: str | None
) -> None:
    """Retract one fact version: end it at --valid-until, or withdraw it as never true.

    FACT_ID is a whole id or the short one the tables print (f91955cd:3); an id that
    names no fact exits 1, an ambiguous one 2. The history keeps the version and the
    retraction.

    Example: apexmem retract f91955cd:3 --reason "wrong person" (ids: apexmem facts Alice)
    """
    from apexmem.cli.ids import resolve_fact, short_fact

    with state.open() as memory:
        found = resolve_fact(memory, fact_id, "FACT_ID")
        with _named_by_option():
            done = memory.retract(found, valid_until=valid_until, reason=reason, actor=actor)
    how = "ended" if valid_until is not None else "withdrawn"
    state.say(done, f"{short_fact(done.fact_id)} {how} (fact {done.fact_id})")
