"""PRISM query-sensitive edge costing (seed 000): which entities a BFS expands first.

An entity reached over an edge costs `(1 - confidence) * max(0.01, 1 - cos(question,
entity))`: a confident edge to an entity close to the question is the cheapest. Without a
similarity (no question vector, or none for the entity) the cost is the confidence's
alone, `1 - confidence`. The floor keeps a perfect match from costing nothing, so the
edge's confidence still tells two close entities apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final, TypeVar

__all__ = ["MIN_DISTANCE", "cheapest_first", "edge_cost"]

MIN_DISTANCE: Final = 0.01

_K = TypeVar("_K")


def edge_cost(confidence: float, similarity: float | None = None) -> float:
    """The cost of reaching an entity over an edge of `confidence` (clamped to [0, 1]), for
    an entity at cosine `similarity` to the question (None or not a number: unknown)."""
    doubt = 1.0 - min(1.0, max(0.0, confidence))
    if similarity is None or math.isnan(similarity):
        return doubt
    return doubt * max(MIN_DISTANCE, 1.0 - similarity)


def cheapest_first(ids: list[_K], costs: Mapping[_K, float]) -> list[_K]:
    """`ids` by cost, cheapest first; those of equal cost (or none given) keep their order."""
    place = {node: i for i, node in enumerate(ids)}
    return sorted(ids, key=lambda n: (costs.get(n, math.inf), place[n]))
