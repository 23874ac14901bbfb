"""Checks of the facade's query arguments: a value of the wrong type is named in a
ValidationError (field, value, rule) rather than failing somewhere inside."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final
from uuid import UUID

import msgspec

from apexmem.domain.types import parse_edge_type
from apexmem.events.errors import ValidationError

__all__ = [
    "MAX_COUNT",
    "REQUIRED",
    "checked_count",
    "checked_edge_types",
    "checked_text",
    "given",
    "uuid_of",
]

MAX_COUNT: Final = 1_000_000
"""The largest count a query takes (a limit, `k`, hops): past it SQLite's integers and the
index's arrays overflow long before any answer could be that long."""


def checked_text(field: str, value: object) -> str:
    """`value`, when it is a string that UTF-8 can encode (no lone surrogates)."""
    if not isinstance(value, str):
        raise ValidationError(field, value, "is not text (a str)")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValidationError(
                field, value, f"is not valid text: a lone surrogate at {e.start} (not UTF-8)"
            ) from e
    return value


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


def given(arguments: dict[str, Any], unknown: dict[str, Any]) -> dict[str, Any]:
    """A typed write method's fields from its `locals()`: every argument given or defaulted
    but `self`, `unknown` and the idempotency key, required ones left out when not given, and
    the unknown ones (which the command's validation refuses by name)."""
    fields = {k: v for k, v in arguments.items() if v is not REQUIRED and k not in _NOT_FIELDS}
    fields.update(unknown)
    return fields


_NOT_FIELDS: Final = frozenset({"self", "unknown", "idempotency_key", "fields"})
