"""Confidence decay (Tier-4, DESIGN 4): how sure the memory still is of a fact, and when a
fact has faded. Pure: `now` is passed in.

`confidence(t) = c0 * exp(-rate * days since the last observation)`, the rate per edge type
(per day). A fact whose decayed confidence is under 0.1 has faded: it leaves recall but not
the log, history or the views of earlier moments. Observing it again restarts the decay
from its (max) confidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Final

from apexmem.domain.recall.scoring import decayed_confidence
from apexmem.events.base import EDGE_TYPES

__all__ = ["FADED_BELOW", "confidence_at", "has_faded", "rates_in_force"]

FADED_BELOW: Final = 0.1
"""A fact whose decayed confidence is under this has faded."""
_SECONDS_PER_DAY: Final = 86_400.0


def confidence_at(confidence: float, observed_at: datetime, now: datetime, rate: float) -> float:
    """The confidence decayed from `observed_at` to `now` (an observation after `now` counts
    as made at `now`)."""
    days = (now - observed_at).total_seconds() / _SECONDS_PER_DAY
    return decayed_confidence(confidence, days, rate)


def has_faded(confidence: float, observed_at: datetime, now: datetime, rate: float) -> bool:
    """Whether the decayed confidence at `now` is under FADED_BELOW."""
    return confidence_at(confidence, observed_at, now, rate) < FADED_BELOW


def rates_in_force(set_rates: Mapping[str, float], default: float) -> dict[str, float]:
    """The rate of every edge type: the one set by policy, else `default`."""
    return {edge_type: set_rates.get(edge_type, default) for edge_type in EDGE_TYPES}
