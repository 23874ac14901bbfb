"""Hybrid seed selection (digest 3.2, DESIGN 6.1): which entities a recall starts from.

Pure: the caller brings each candidate's match score (full text or vectors), its degree
and edge-type count over the edges in play, and its community (none until communities
exist).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Final
from uuid import UUID

__all__ = ["MIN_SEED_SCORE", "hybrid_seeds", "structural_scores"]

MIN_SEED_SCORE: Final = 0.1
"""Seed scores are clamped to [0.1, 1]: a seed always starts above the activation threshold."""
_EDGE_TYPES: Final = 4


def structural_scores(structure: Mapping[UUID, tuple[int, int]]) -> dict[UUID, float]:
    """`0.6 * degree / max_degree + 0.4 * min(types / 4, 1)` per entity, from (degree, types).

    The maximum degree is taken over the entities given (at least 1); no edges scores 0.
    One semantic edge alone scores 0.6 + 0.1 = 0.7.
    """
    top = max((degree for degree, _ in structure.values()), default=1) or 1
    return {
        entity: 0.0 if degree == 0 else 0.6 * degree / top + 0.4 * min(types / _EDGE_TYPES, 1.0)
        for entity, (degree, types) in structure.items()
    }


def hybrid_seeds(
    matches: Mapping[UUID, float],
    structural: Mapping[UUID, float],
    *,
    limit: int,
    weight: float = 0.4,
    communities: Mapping[UUID, Hashable] | None = None,
    community_cap: int = 3,
) -> dict[UUID, float]:
    """The best `limit` seeds by `match * (1 - weight) + structural * weight`, clamped to [0.1, 1].

    At most `community_cap` seeds per community (0: no cap; entities without a community
    are not capped); if the cap left nothing, the uncapped best are taken (SA-INV-10).
    Ties go to the smaller id, so the choice is deterministic.
    """
    if limit <= 0 or not matches:
        return {}
    scored = sorted(
        ((m * (1.0 - weight) + structural.get(e, 0.0) * weight, e) for e, m in matches.items()),
        key=lambda pair: (-pair[0], pair[1]),
    )
    kept = _capped(scored, communities or {}, community_cap) or scored
    return {e: min(max(s, MIN_SEED_SCORE), 1.0) for s, e in kept[:limit]}


def _capped(
    scored: list[tuple[float, UUID]], communities: Mapping[UUID, Hashable], cap: int
) -> list[tuple[float, UUID]]:
    if cap <= 0:
        return scored
    taken: dict[Hashable, int] = {}
    kept = []
    for score, entity in scored:
        community = communities.get(entity)
        if community is not None:
            if taken.get(community, 0) >= cap:
                continue
            taken[community] = taken.get(community, 0) + 1
        kept.append((score, entity))
    return kept
