"""Which fact versions a query sees: a moment on the two time axes, edge types, fading.

A `Moment` is a state of the memory: the world at `valid_at` (open-ended facts when None)
as the store had been told it by `known_at` (everything told when None). A `Lens` is what a
fact query filters by: a moment, the edge types kept (all when empty) and, when given, the
`Fading` that leaves faded facts out. Both are built once where a question comes in and
handed to every read-model query it asks.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

import msgspec

from apexmem.readmodels.decay import Fading
from apexmem.readmodels.prepared import stored_times

__all__ = ["EVERY_FACT", "NOW", "Lens", "Moment"]


class Moment(msgspec.Struct, frozen=True, kw_only=True):
    """A state of the memory: true at `valid_at`, as told by `known_at` (None: now)."""

    valid_at: datetime | None = None
    known_at: datetime | None = None

    def stored(self) -> dict[str, int | None]:
        """The `valid_at` and `known_at` parameters of a prepared statement (as stored)."""
        return stored_times(self.valid_at, self.known_at)


NOW: Final = Moment()
"""The present: open-ended facts, in the state the store holds."""


class Lens(msgspec.Struct, frozen=True, kw_only=True):
    """The fact versions believed at `moment`, of `edge_types` (all when empty), faded ones
    left out when `fading` is given."""

    moment: Moment = NOW
    edge_types: tuple[str, ...] = ()
    fading: Fading | None = None

    @property
    def valid_at(self) -> datetime | None:
        """The moment's valid time."""
        return self.moment.valid_at

    @property
    def known_at(self) -> datetime | None:
        """The moment's transaction time."""
        return self.moment.known_at

    def params(self) -> dict[str, Any]:
        """The parameters of `prepared_believed` for this lens (values as stored)."""
        found: dict[str, Any] = {**self.moment.stored(), "edge_types": list(self.edge_types)}
        if self.fading is not None:
            found.update(self.fading.params())
        return found

    def shape(self) -> tuple[bool, bool, bool, bool]:
        """The flags of `prepared_believed`: (valid, known, typed, fading)."""
        return (
            self.moment.valid_at is not None,
            self.moment.known_at is not None,
            bool(self.edge_types),
            self.fading is not None,
        )

    def typed(self, edge_types: tuple[str, ...]) -> Lens:
        """This lens over `edge_types` instead."""
        return msgspec.structs.replace(self, edge_types=edge_types)


EVERY_FACT: Final = Lens()
"""Every fact version believed now, faded or not."""
