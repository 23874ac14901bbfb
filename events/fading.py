"""The decay stream: each decay pass records which facts faded and which came back.

Confidence decay is computed when a query runs (domain.decay): recall leaves out facts
whose decayed confidence is under the threshold. A decay pass writes down, once, what that
rule says changed since the pass before, so `history` and `diff` can say when and why a
belief stopped being recalled. The event carries its moment: replay never reads a clock.
"""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

import msgspec

from apexmem.events.base import Event, Probability
from apexmem.events.timeutil import UtcDateTime

__all__ = ["FactFade", "FactsFaded", "FadeReason"]

FadeReason = Literal["decayed", "reinforced", "rate changed"]
"""Why a fact crossed: `decayed` under the threshold; lifted back above it by being observed
again (`reinforced`) or by a lower rate for its edge type (`rate changed`)."""


class FactFade(msgspec.Struct, frozen=True, kw_only=True):
    """One fact version that crossed the recall threshold, and the decay that applied."""

    fact_id: UUID
    slot_id: UUID
    edge_type: str
    rate: Annotated[float, msgspec.Meta(ge=0.0)]
    """The decay rate (per day) of its edge type at the pass (no upper bound: a default
    rate from Settings built in Python is not checked, and a record must always decode)."""
    confidence: Probability
    """Its confidence decayed to the pass's moment."""
    observed_at: UtcDateTime
    """Its last observation, where the decay runs from."""
    reason: FadeReason


class FactsFaded(Event, frozen=True, kw_only=True, tag="facts-faded.v1"):
    """A decay pass at `at`: the believed facts whose decayed confidence went under
    `threshold` since the previous pass (`faded`), and those recorded as faded that are
    above it again (`restored`)."""

    at: UtcDateTime
    """The moment the decay was measured at."""
    previous: UtcDateTime | None = None
    """The moment of the pass before it (None: the first pass)."""
    threshold: Probability
    faded: list[FactFade] = []
    restored: list[FactFade] = []
