"""Checks of the facade's query arguments: a value of the wrong type is named in a
ValidationError (field, value, rule) rather than failing somewhere inside."""

from __future__ import annotations

from uuid import UUID

from apexmem.events.errors import ValidationError

__all__ = ["checked_text", "uuid_of"]


def checked_text(field: str, value: object) -> str:
    """`value`, when it is a string."""
    if not isinstance(value, str):
        raise ValidationError(field, value, "is not text (a str)")
    return value


def uuid_of(field: str, value: object) -> UUID:
    """`value` as a UUID, from a UUID or its text."""
    if isinstance(value, UUID):
        return value
    try:
        return UUID(checked_text(field, value))
    except ValueError as e:
        raise ValidationError(field, value, "is not a UUID") from e
