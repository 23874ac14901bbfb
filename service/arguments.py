"""Checks of the facade's query arguments: a value of the wrong type is named in a
ValidationError (field, value, rule) rather than failing somewhere inside."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final
from uuid import UUID

import msgspec

from apexmem.domain.commands import AssertFact, build, build_many, validated
from apexmem.domain.text import require_utf8
from apexmem.domain.types import parse_edge_type
from apexmem.events.errors import ValidationError

__all__ = [
    "MAX_COUNT",
    "REQUIRED",
    "checked_count",
    "checked_edge_types",
    "checked_text",
    "fact_commands",
    "given",
    "in_batch",
    "uuid_of",
]

MAX_COUNT: Final = 1_000_000
"""The largest count a query takes (a limit, `k`, hops): past it SQLite's integers and the
index's arrays overflow long before any answer could be that long."""


def checked_text(field: str, value: object) -> str:
    """`value`, when it is a string that UTF-8 can encode (no lone surrogates)."""
    if not isinstance(value, str):
        raise ValidationError(field, value, "is not text (a str)")
    return require_utf8(field, value)


def checked_count(field: str, value: object, *, minimum: int = 0) -> int:
    """`value`, when it is an int (not a bool) from `minimum` to `MAX_COUNT`."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_COUNT:
        raise ValidationError(
            field, value, f"is not a count: a whole number from {minimum} to {MAX_COUNT:,}"
        )
    return value


def checked_edge_types(field: str, values: object) -> list[str]:
    """`values` as a list of edge types (aliases mapped), each named by its place if refused."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ValidationError(field, values, "is not a list of edge types")
    return [
        parse_edge_type(checked_text(f"{field}[{i}]", t), f"{field}[{i}]")
        for i, t in enumerate(values)
    ]


def uuid_of(field: str, value: object) -> UUID:
    """`value` as a UUID, from a UUID or its text."""
    if isinstance(value, UUID):
        return value
    try:
        return UUID(checked_text(field, value))
    except ValueError as e:
        raise ValidationError(field, value, "is not a UUID") from e


REQUIRED: Final[Any] = msgspec.UNSET
"""The default of a required keyword of a typed write method: left out of the fields, so the
command's validation names it as missing (as it names every other bad field)."""


def given(
    arguments: dict[str, Any], unknown: dict[str, Any], defaults: dict[str, Any] | None
) -> dict[str, Any]:
    """A typed write method's fields from its `locals()`: the arguments given (a value that
    is its parameter's default object is left to the command's own, equal, default; so is
    REQUIRED, which validation then names as missing), but `self`, `unknown` and the
    idempotency key, and the unknown ones (which validation refuses by name)."""
    kept = defaults or {}
    fields = {
        k: v
        for k, v in arguments.items()
        if k not in _NOT_FIELDS and v is not REQUIRED and v is not kept.get(k, REQUIRED)
    }
    fields.update(unknown)
    return fields


_NOT_FIELDS: Final = frozenset({"self", "unknown", "idempotency_key", "fields"})


def fact_commands(facts: object) -> list[AssertFact]:
    """The facts of a batch (mappings of AssertFact's fields, or AssertFacts) as validated
    commands; a ValidationError names `facts[index].field`."""
    if isinstance(facts, Mapping | str | bytes) or not isinstance(facts, Iterable):
        raise ValidationError("facts", _short(facts), "is not a list of facts")
    given = list(facts)
    if all(isinstance(f, Mapping) for f in given):
        try:
            return build_many(AssertFact, given)  # validated in one msgspec call
        except ValidationError as e:
            raise ValidationError(f"facts{e.field}", e.value, e.rule) from e
    return [_fact_at(i, f) for i, f in enumerate(given)]


def in_batch(name: str, error: ValidationError, count: int) -> ValidationError:
    """`error` from writing a batch of `count` commands, its field named inside `name`: the
    write path names a lone command's field without its index."""
    if error.field.startswith("["):
        return ValidationError(f"{name}{error.field}", error.value, error.rule)
    if count == 1 and error.field != "idempotency_key":
        return ValidationError(f"{name}[0].{error.field}", error.value, error.rule)
    return error


def _fact_at(index: int, fact: object) -> AssertFact:
    """The `index`th fact of a batch given as a mapping or an AssertFact, validated."""
    if not isinstance(fact, Mapping | AssertFact):
        raise ValidationError(
            f"facts[{index}]",
            _short(fact),
            "is not a mapping of AssertFact's fields or an AssertFact",
        )
    try:
        if isinstance(fact, Mapping):
            return build(AssertFact, fact)
        [command] = validated([fact])
    except ValidationError as e:
        raise ValidationError(f"facts[{index}].{e.field}", e.value, e.rule) from e
    assert isinstance(command, AssertFact)
    return command


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
