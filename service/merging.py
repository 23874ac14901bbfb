"""Merges: which entities were merged into which, by hand or by similarity."""

from __future__ import annotations

from apexmem.events.errors import ValidationError
from apexmem.readmodels import ReadModels
from apexmem.readmodels.merges import MergeRow, merges

__all__ = ["MergeRow", "merges_in"]


def merges_in(store: ReadModels, *, apart: bool, limit: int) -> list[MergeRow]:
    """Entities merged into others, oldest first, with the similarity verdict if any (and,
    with `apart`, the ambiguous pairs resolution by similarity kept apart)."""
    if limit < 1:
        raise ValidationError("limit", limit, "must be at least 1")
    with store.read() as connection:
        return merges(connection, apart=apart, limit=limit)
