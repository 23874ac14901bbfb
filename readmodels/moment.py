"""Which fact versions a query sees: a moment on the two time axes, edge types, fading.

A `Moment` is a state of the memory: the world at `valid_at` as the store had been told it
by `known_at` (everything told when None). Without `valid_at`, facts are seen as they hold
at `now` (the memory's clock where the question came in, or the `known_at` asked about):
an open-ended fact and one whose end is still ahead are both current. With neither (the
read models' own view, used by upkeep), only open-ended facts are. A `Lens` is what a
fact query filters by: a moment, the edge types kept (all when empty) and, when given, the
`Fading` that leaves faded facts out. Both are built once where a question comes in and
handed to every read-model query it asks.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Final

import msgspec

from apexmem.readmodels.decay import Fading
from apexmem.readmodels.prepared import stored_times
from apexmem.readmodels.tables import stored_micros

__all__ = ["EVERY_FACT", "NOW", "Lens", "Moment"]

_INSTANT: Final = timedelta(microseconds=1)
"""The read models' resolution: an instant t is the window [t, t + 1 microsecond)."""


class Moment(msgspec.Struct, frozen=True, kw_only=True):
    """A state of the memory: true at `valid_at`, as told by `known_at` (None: now)."""

    valid_at: datetime | None = None
    known_at: datetime | None = None
    now: datetime | None = None
    """The moment "current" means when `valid_at` is not given: facts hold then (a fact
    true until 2030 is current today). None: open-ended facts only."""
    during: tuple[datetime, datetime] | None = None
    """A valid-time window [start, end) when `valid_at` is not given: the facts whose
    validity overlaps it, not only those valid at one instant ("in 2019": a job held from
    2017 to 2019-03 and the next one both)."""

    @property
    def held_at(self) -> datetime | None:
        """The valid time facts are seen at: `valid_at`, else the window's last instant,
        else `now`."""
        if self.valid_at is not None:
            return self.valid_at
        if self.during is not None:
            return max(self.during[0], self.during[1] - _INSTANT)
        return self.now

    @property
    def span(self) -> tuple[datetime, datetime] | None:
        """The valid time a fact must overlap, [start, end): the window, or the instant
        `held_at` as [t, t + 1 microsecond); None: open-ended facts."""
        if self.valid_at is None and self.during is not None and self.during[0] < self.during[1]:
            return self.during
        held = self.held_at
        return None if held is None else (held, held + _INSTANT)

    def stored(self) -> dict[str, int | None]:
        """The `valid_at` and `known_at` parameters of a prepared statement (as stored), for
        what was said by `valid_at` (messages: `now` does not apply to them)."""
        return stored_times(self.valid_at, self.known_at)

    def stored_held(self) -> dict[str, int | None]:
        """The same for fact versions, over `span`: `valid_at` its start, `valid_end` its
        end."""
        span = self.span
        found = stored_times(None if span is None else span[0], self.known_at)
        found["valid_end"] = None if span is None else stored_micros(span[1])
        return found

    def current(self, now: datetime) -> Moment:
        """This moment with "current" meaning valid at `known_at` when it is given (what
        the store believed then held then, as a replay up to it answers), else at `now`."""
        return msgspec.structs.replace(
            self, now=self.known_at if self.known_at is not None else now
        )


NOW: Final = Moment()
"""The present in the state the store holds: open-ended facts (see `Moment.current` for
the facts valid now)."""


class Lens(msgspec.Struct, frozen=True, kw_only=True):
    """The fact versions believed at `moment`, of `edge_types` (all when empty), faded ones
    left out when `fading` is given."""

    moment: Moment = NOW
    edge_types: tuple[str, ...] = ()
    fading: Fading | None = None

    @property
    def valid_at(self) -> datetime | None:
        """The valid time facts are seen at (`Moment.held_at`)."""
        return self.moment.held_at

    @property
    def span(self) -> tuple[datetime, datetime] | None:
        """The valid time a fact must overlap (`Moment.span`)."""
        return self.moment.span

    @property
    def known_at(self) -> datetime | None:
        """The moment's transaction time."""
        return self.moment.known_at

    def params(self) -> dict[str, Any]:
        """The parameters of `prepared_believed` for this lens (values as stored)."""
        found: dict[str, Any] = {
            **self.moment.stored_held(),
            "edge_types": list(self.edge_types),
        }
        if self.fading is not None:
            found.update(self.fading.params())
        return found

    def shape(self) -> tuple[bool, bool, bool, bool]:
        """The flags of `prepared_believed`: (valid, known, typed, fading)."""
        return (
            self.moment.span is not None,
            self.moment.known_at is not None,
            bool(self.edge_types),
            self.fading is not None,
        )

    def typed(self, edge_types: tuple[str, ...]) -> Lens:
        """This lens over `edge_types` instead."""
        return msgspec.structs.replace(self, edge_types=edge_types)


EVERY_FACT: Final = Lens()
"""Every fact version believed now, faded or not."""
