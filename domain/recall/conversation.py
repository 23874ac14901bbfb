"""Conversation-aware scoring of fused recall candidates: turns in context, named speakers first.

A short reply ("The store's doing great!") does not hold the words of the question it
answers; the turn before it does. So each turn also scores a share of its neighbours'
scores (it stays one hit). And a question that names a participant is about their turns:
those, and facts about them, are boosted instead of every turn that merely addresses them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Hashable, Mapping
from typing import Final, TypeVar

__all__ = ["boosted", "in_context", "without_names"]

K = TypeVar("K", bound=Hashable)

_POSSESSIVE: Final = r"(?:['\u2019]s)?"


def in_context(
    scores: Mapping[K, float],
    around: Mapping[K, tuple[K | None, K | None]],
    *,
    after: float,
    before: float,
) -> dict[K, float]:
    """Each item's score plus `after` x the score of the item just before it and `before` x
    the score of the item just after it (`around`: item -> (previous, next)).

    An item found only as a neighbour enters with its share; every item stays once.
    """
    found = dict(scores)
    for item, score in scores.items():
        previous, following = around.get(item, (None, None))
        if following is not None and after:
            found[following] = found.get(following, 0.0) + after * score
        if previous is not None and before:
            found[previous] = found.get(previous, 0.0) + before * score
    return found


def boosted(scores: Mapping[K, float], favoured: Collection[K], boost: float) -> dict[K, float]:
    """The scores with those of `favoured` items multiplied by `1 + boost`."""
    if not favoured or not boost:
        return dict(scores)
    return {k: s * (1 + boost) if k in favoured else s for k, s in scores.items()}


def without_names(text: str, names: Collection[str]) -> str:
    """`text` with each of `names` (whole words, any case, and their possessive) taken out."""
    if not names:
        return text
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"(?<!\w)(?:{alternatives}){_POSSESSIVE}(?!\w)", re.IGNORECASE)
    return " ".join(pattern.sub(" ", text).split())
