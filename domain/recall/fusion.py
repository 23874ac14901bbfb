"""Merging ranked lists: reciprocal rank fusion (k = 60) and dedupe-by-key keeping the best."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Final, TypeVar

__all__ = [
    "RRF_K",
    "counted_once",
    "dedupe",
    "placed",
    "ranked",
    "reciprocal_rank_fusion",
    "weighted_rank_fusion",
]

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
    return weighted_rank_fusion(
        ([(item, 1.0, rank) for rank, item in enumerate(ranking, start=1)] for ranking in rankings),
        k=k,
        weights=weights,
    )


def weighted_rank_fusion(
    rankings: Iterable[Sequence[tuple[K, float, int]]],
    *,
    k: int = RRF_K,
    weights: Sequence[float] = (),
) -> list[tuple[K, float]]:
    """Reciprocal rank fusion where each ranked item also carries how much it counts and its
    rank (from 1; items may share one, `ranked`): `sum(w * trust / (k + rank))` over the
    rankings (`w` per ranking as in `reciprocal_rank_fusion`, `trust` per item of a ranking,
    in [0, 1]). With every trust at 1 and each item ranked by its position it is
    `reciprocal_rank_fusion`; an item ranked by weaker evidence (a fact believed at 0.8)
    counts that much less. Ties keep the order in which items were first seen."""
    scores: dict[K, float] = {}
    for i, ranking in enumerate(rankings):
        weight = weights[i] if weights else 1.0
        for item, trust, rank in ranking:
            scores[item] = scores.get(item, 0.0) + weight * trust / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))


def placed(found: Iterable[tuple[K, Hashable, bool]], pool: int) -> list[K]:
    """The items of one best-first list kept for the fusion: `pool` pieces of evidence.

    Each item comes with its piece of evidence (`unit`: a turn and the facts learned from
    it are one) and whether it is first-hand (a turn, a fact told) or derived (read out of
    a turn by an extractor). A derived item is a reading of its turn, not another turn, so
    it never takes a first-hand piece's place: the first `pool` pieces holding a first-hand
    item are kept whatever derived items come between them, and a derived piece is kept
    when it is found among the first `pool` pieces. Every item of a piece kept is kept.
    """
    kept: list[K] = []
    units: set[Hashable] = set()
    told: set[Hashable] = set()  # the pieces holding a first-hand item
    for item, unit, own in found:
        if own and unit not in told and len(told) < pool:
            told.add(unit)
        elif unit not in units and (own or len(units) >= pool):
            continue
        units.add(unit)
        kept.append(item)
    return kept


def ranked(first_hand: Sequence[bool]) -> list[int]:
    """The ranks (from 1) of a best-first list's pieces of evidence, first-hand or derived
    (`placed`). A first-hand piece is ranked among the first-hand ones, as it would be with
    no derived piece in the list, so a derived one never moves it down. A derived piece
    (a turn's reading whose turn is not in the list by its own words) is no better
    evidence than the turn, which ranks after every turn in the list: it comes after them,
    in the order found."""
    told = sum(first_hand)
    ranks: list[int] = []
    counts = [0, 0]
    for own in first_hand:
        counts[own] += 1
        ranks.append(counts[1] if own else told + counts[0])
    return ranks


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


def counted_once(
    rankings: Sequence[Sequence[tuple[K, float, int, bool]]], weights: Sequence[float]
) -> list[list[tuple[K, float, int]]]:
    """The lists' places (lead, trust, rank) that count in the fusion, given whether each
    piece's holder there is first-hand. A reading (a fact an extractor read out of a turn)
    is no better evidence of the turn than its own words: a turn some list found by its
    words is ranked by its words alone, its readings elsewhere add nothing; a turn found
    only through readings counts once, in the list where its reading ranks best. So a
    reading never lifts a turn above the turns it would follow without extraction."""
    told = {lead for ranking in rankings for lead, _, _, own in ranking if own}
    best: dict[K, tuple[float, int]] = {}
    for i, ranking in enumerate(rankings):
        for lead, trust, rank, _ in ranking:
            share = weights[i] * trust / (RRF_K + rank)
            if lead not in told and (lead not in best or share > best[lead][0]):
                best[lead] = (share, i)
    return [
        [
            (lead, trust, rank)
            for lead, trust, rank, own in ranking
            if (own if lead in told else best[lead][1] == i)
        ]
        for i, ranking in enumerate(rankings)
    ]
