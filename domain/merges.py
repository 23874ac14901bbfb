"""Following merges forward, pure: an entity merged into B, B into C, resolves to C.

Every reader of merges (the write path's entity states, the read models' merge columns,
the replayed snapshot, community detection) follows them with `followed`, so an id
resolves to the same entity everywhere and a walk ends by the same rule.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Final, TypeVar

__all__ = ["MAX_MERGE_HOPS", "followed", "merge_roots"]

MAX_MERGE_HOPS: Final = 32
"""The most merges a walk follows from one id. The deciders refuse a merge whose source
was merged already or whose target resolves to the source, so merges never loop; the bound
keeps a damaged log from making a walk unbounded."""

T = TypeVar("T", bound=Hashable)


def followed(start: T, step: Callable[[T], T | None], *, bound: int = MAX_MERGE_HOPS) -> T:
    """Where `start` resolves to, stepping to each id's successor (`step` gives None at an
    id with no successor).

    The walk start, step(start), ... stops at the first id that has no successor, that the
    walk has met before (a cycle ends where it closes), or that is `bound` hops from start.
    """
    seen: set[T] | None = None  # most ids were never merged: no set for them
    current = start
    for _ in range(bound):
        following = step(current)
        if following is None:
            return current
        if seen is None:
            seen = {start}
        if following in seen:
            return following
        seen.add(following)
        current = following
    return current

def merge_roots(into: Mapping[T, T], ids: Iterable[T]) -> dict[T, T]:
    """Each of `ids` -> where it resolves to through `into` (id -> the id it was merged into)."""
    return {entity: followed(entity, into.get) for entity in ids}
