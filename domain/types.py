"""Entity types and MAGMA edge types (DESIGN section 9)."""

from __future__ import annotations

from typing import Final, Literal, get_args

from apexmem.events.base import EDGE_TYPES
from apexmem.events.errors import ValidationError

__all__ = [
    "EDGE_TYPES",
    "EDGE_TYPE_ALIASES",
    "ENTITY_TYPES",
    "EntityType",
    "parse_edge_type",
    "parse_entity_type",
    "resolve_entity_type",
]

EntityType = Literal[
    "person",
    "organization",
    "project",
    "tool",
    "technology",
    "language",
    "file",
    "config",
    "concept",
    "event",
    "location",
]
"""The entity types as a type (schemas list them); `ENTITY_TYPES` as values."""
ENTITY_TYPES: Final[tuple[str, ...]] = get_args(EntityType)
EDGE_TYPE_ALIASES: Final = {"hierarchical": "entity", "co_occurrence": "semantic"}


def parse_entity_type(value: str) -> str:
    """Strict parse: one of ENTITY_TYPES exactly (lowercase), else ValidationError."""
    if value not in ENTITY_TYPES:
        raise ValidationError("entity_type", value, f"is not one of {', '.join(ENTITY_TYPES)}")
    return value


def resolve_entity_type(value: str) -> tuple[str, bool]:
    """Lenient resolve: trimmed and lowercased; unknown types become concept.

    Returns the type and whether it was known, so the caller can log the fallback.
    """
    lowered = value.strip().lower()
    if lowered in ENTITY_TYPES:
        return lowered, True
    return "concept", False


def parse_edge_type(value: str, field: str = "edge_type") -> str:
    """Strict parse: a MAGMA type in lowercase, or one of its input aliases."""
    if value in EDGE_TYPES:
        return value
    if value in EDGE_TYPE_ALIASES:
        return EDGE_TYPE_ALIASES[value]
    accepted = ", ".join((*EDGE_TYPES, *EDGE_TYPE_ALIASES))
    raise ValidationError(field, value, f"is not one of {accepted} (lowercase)")
