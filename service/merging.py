"""Merges on a Memory: which entities were merged into which, by hand or by similarity."""

from __future__ import annotations

from collections.abc import Callable

from apexmem.events.errors import ValidationError
from apexmem.readmodels import ReadModelStore
from apexmem.readmodels.merges import MergeRow, merges

__all__ = ["MergeRow", "Merging"]


class Merging:
    """Mixed into Memory (it brings the attributes)."""

    store: ReadModelStore
    _ready: Callable[[], None]

    def merges(self, *, apart: bool = False, limit: int = 100) -> list[MergeRow]:
        """Entities merged into others, oldest first, with the similarity verdict if any.

        With `apart`, also the ambiguous pairs resolution by similarity kept apart
        (`use_embedding_resolution`), so a person can merge them by hand.
        """
        if limit < 1:
            raise ValidationError("limit", limit, "must be at least 1")
        self._ready()
        with self.store.read() as connection:
            return merges(connection, apart=apart, limit=limit)
