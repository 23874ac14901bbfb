"""Scoring formulas (digest 3.5, DESIGN 6.4): evolved weight, composite score, recency, decay.

Pure functions of their arguments; `now` and ages are passed in, never read from a clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Final

__all__ = [
    "EDGE_TYPE_WEIGHTS",
    "MAX_RECENCY_BOOST",
    "composite_score",
    "decayed_confidence",
    "evolved_weight",
    "recency_weight",
    "score_with_decay",
]

EDGE_TYPE_WEIGHTS: Final[Mapping[str, float]] = {
    "causal": 1.2,
    "semantic": 1.0,
    "temporal": 0.9,
    "entity": 0.8,
}
MAX_RECENCY_BOOST: Final = 2.0
_SECONDS_PER_DAY: Final = 86_400.0


def evolved_weight(retrieval_count: float, confidence: float) -> float:
    """A-MEM: `min(1, confidence * (1 + 0.2 ln(1 + count)))`; a negative count counts as 0."""
    count = max(retrieval_count, 0.0)
    return min(confidence * (1.0 + 0.2 * math.log1p(count)), 1.0)


def composite_score(
    match: float,
    hop: int,
    confidence: float,
    edge_type: str,
    *,
    retrieval_count: float = 0.0,
    weights: Mapping[str, float] = EDGE_TYPE_WEIGHTS,
) -> float:
    """`match * 1/(1+hop) * evolved_weight * type_weight`; it can exceed 1 (causal edges)."""
    type_weight = weights.get(edge_type, 1.0)
    return match / (1.0 + hop) * evolved_weight(retrieval_count, confidence) * type_weight


def recency_weight(valid_from: datetime | None, now: datetime, rate: float) -> float:
    """SYNAPSE's recency: `1 / (1 + age_days * rate)`; 1 when the rate is 0 or the time unknown."""
    if rate <= 0.0 or valid_from is None:
        return 1.0
    age_days = max((now - valid_from).total_seconds(), 0.0) / _SECONDS_PER_DAY
    return 1.0 / (1.0 + age_days * rate)


def score_with_decay(
    composite: float, valid_from: datetime | None, now: datetime, rate: float
) -> float:
    """The composite with an additive recency boost, capped at 2x (the composite when rate 0)."""
    if rate <= 0.0:
        return composite
    boost = 0.0 if valid_from is None else recency_weight(valid_from, now, rate)
    return composite * min(1.0 + boost, MAX_RECENCY_BOOST)


def decayed_confidence(confidence: float, days_since_observed: float, rate: float) -> float:
    """Tier-4 decay: `c0 * exp(-rate * days)`; a future observation counts as now."""
    return confidence * math.exp(-rate * max(days_since_observed, 0.0))
