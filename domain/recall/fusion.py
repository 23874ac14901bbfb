"""Merging ranked lists: reciprocal rank fusion (k = 60) and dedupe-by-key keeping the best."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Final, TypeVar

__all__ = ["RRF_K", "dedupe", "reciprocal_rank_fusion", "weighted_rank_fusion"]

RRF_K: Final = 60

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


def reciprocal_rank_fusion(
    rankings: Iterable[Sequence[K]], *, k: int = RRF_K, weights: Sequence[float] = ()
) -> list[tuple[K, float]]:
    """Items of several best-first rankings by `sum(w / (k + rank))`, rank from 1, best first.

    `weights` has one weight per ranking (1 for each when empty). Ties keep the order in
    which items were first seen, so the result is deterministic.
    """
    scores: dict[K, float] = {}
    for i, ranking in enumerate(rankings):
        weight = weights[i] if weights else 1.0
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))


def weighted_rank_fusion(
    rankings: Iterable[Sequence[tuple[K, float]]],
    *,
    k: int = RRF_K,
    weights: Sequence[float] = (),
) -> list[tuple[K, float]]:
    """Reciprocal rank fusion where each ranked item also carries how much it counts:
    `sum(w * trust / (k + rank))` over the rankings (`w` per ranking as in
    `reciprocal_rank_fusion`, `trust` per item of a ranking, in [0, 1]). With every trust
    at 1 it is `reciprocal_rank_fusion`; an item ranked by weaker evidence (a fact believed
    at 0.8) counts that much less. Ties keep the order in which items were first seen."""
    scores: dict[K, float] = {}
    for i, ranking in enumerate(rankings):
        weight = weights[i] if weights else 1.0
        for rank, (item, trust) in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight * trust / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))


def dedupe(
    items: Iterable[T], key: Callable[[T], Hashable], score: Callable[[T], float]
) -> list[T]:
    """One item per key, the best scored (the first seen on a tie), best first."""
    best: dict[Hashable, T] = {}
    for item in items:
        k = key(item)
        if k not in best or score(item) > score(best[k]):
            best[k] = item
    return sorted(best.values(), key=score, reverse=True)
