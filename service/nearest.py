"""Asking the vector index again until enough of the nearest items can be shown.

The index holds every version ever embedded (superseded and retracted facts, items told
after a past moment, entities merged away), so the nearest `n` may hold fewer than `n` a
question can show. Recall's lists, its seed fallback and `similar` all ask for more than
they need, then for `growth` times more while too few can be shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import TypeVar

import msgspec

__all__ = ["Rounds", "nearest_shown"]

K = TypeVar("K")
S = TypeVar("S", bound=Sized)


class Rounds(msgspec.Struct, frozen=True, kw_only=True):
    """Ask for `first` items, then `growth` times more each time, until `enough` can be
    shown, the index has no more, or `rounds` questions were asked (None: no bound)."""

    first: int
    enough: int
    growth: int = 4
    rounds: int | None = None


def nearest_shown(
    nearest: Callable[[int], list[tuple[K, float]]],
    shown: Callable[[list[tuple[K, float]]], S],
    rounds: Rounds,
    *,
    out_of_time: Callable[[], bool] = lambda: False,
) -> tuple[list[tuple[K, float]], S]:
    """The last nearest items asked for (best first) and what `shown` made of them.

    `out_of_time` is asked whenever too few can be shown: a recall's budget ends the
    questions too.
    """
    wanted = rounds.first
    asked = 0
    while True:
        near = nearest(wanted)
        kept = shown(near)
        asked += 1
        if len(kept) >= rounds.enough or len(near) < wanted:
            return near, kept
        if out_of_time() or (rounds.rounds is not None and asked >= rounds.rounds):
            return near, kept
        wanted *= rounds.growth
