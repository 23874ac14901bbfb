"""Recall algorithms over an abstract graph: scoring, routing, spreading activation, fusion."""

from apexmem.domain.recall.activation import (
    Activated,
    ActivationParams,
    ActivationResult,
    Edge,
    spread,
)
from apexmem.domain.recall.context import clean_line, format_lines
from apexmem.domain.recall.fusion import (
    dedupe,
    placed,
    ranked,
    reciprocal_rank_fusion,
    weighted_rank_fusion,
)
from apexmem.domain.recall.router import classify_edge_types
from apexmem.domain.recall.scoring import (
    EDGE_TYPE_WEIGHTS,
    MAX_RECENCY_BOOST,
    composite_score,
    decayed_confidence,
    evolved_weight,
    recency_weight,
    score_with_decay,
)

__all__ = [
    "EDGE_TYPE_WEIGHTS",
    "MAX_RECENCY_BOOST",
    "Activated",
    "ActivationParams",
    "ActivationResult",
    "Edge",
    "classify_edge_types",
    "clean_line",
    "composite_score",
    "decayed_confidence",
    "dedupe",
    "evolved_weight",
    "format_lines",
    "placed",
    "ranked",
    "recency_weight",
    "reciprocal_rank_fusion",
    "score_with_decay",
    "spread",
    "weighted_rank_fusion",
]
