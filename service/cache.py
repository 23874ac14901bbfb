"""A bounded map of stream states, shared by the write path's batches."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final
from uuid import UUID

if TYPE_CHECKING:
    from apexmem.service.naming import Resolution

__all__ = ["StateCache"]

_DEFAULT_SIZE: Final = 200_000


class StateCache:
    """Stream id to folded state; past the size, the least recently written states leave first.

    Reads do not reorder entries, which keeps the hot path cheap; writes move a stream to
    the back. Entries are keyed by the id's integer: `UUID.__hash__` runs in Python, an int
    hashes in C (a batch of 1,000 facts looks streams up tens of thousands of times). An
    OrderedDict drops its oldest entry in O(1), so a full cache costs a batch only the
    entries it evicts: the plain dict before it copied every key to find the oldest, once
    per cache miss, which took over half of a full cache's append time.
    """

    def __init__(self, size: int = _DEFAULT_SIZE) -> None:
        self._size = size
        self._states: OrderedDict[int, object] = OrderedDict()
        self._names: dict[tuple[str, str], Resolution] = {}
        self.complete_at: int | None = None
        """A log position at which every stream of the log is cached or `unknown`, if known.

        The writer sets it (`complete`); evicting a state, or taking another cache's, clears it."""
        self.unknown: set[int] = set()
        """While `complete_at` is set, the streams (`UUID.int`) of the log whose states were
        forgotten (another process appended to them, or began them; a conflict): these are
        read, and any other stream the cache lacks is new."""
        self.synced_at = 0
        """The log position every cached state and name is true at: the writer forgets
        what other processes changed after it before it decides (see `Writer`)."""

    def name(self, name: str, kind: str) -> Resolution | None:
        """The existing entity a (name, type as given) resolved to in a committed batch."""
        return self._names.get((name, kind))

    def names(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Resolution]:
        """`name(*pair)` of many pairs, in one call: the pairs that have one."""
        names = self._names
        return {pair: found for pair in pairs if (found := names.get(pair)) is not None}

    def put_names(self, resolved: Mapping[tuple[str, str], Resolution], *, merged: bool) -> None:
        """Remember names resolved by a committed batch; after a merge, forget the rest.

        A name resolves to an existing entity through its alias (a first claim never
        changes) and the entity's merge pointers, so only a merge makes a remembered
        resolution wrong.
        """
        if merged or len(self._names) > self._size:
            self._names.clear()
        self._names.update(resolved)

    def get(self, stream: UUID) -> object | None:
        """The cached state of a stream, if any."""
        return self._states.get(stream.int)

    def missing(self, streams: Iterable[UUID]) -> list[UUID]:
        """The streams (each once, in first-seen order) with no cached state."""
        cached = self._states
        return [s for key, s in {s.int: s for s in streams}.items() if key not in cached]

    def put(self, stream: UUID, state: object) -> None:
        """Remember a stream's state, evicting the oldest past the size."""
        self.put_all([(stream.int, state)])

    def put_all(self, states: Iterable[tuple[int, object]]) -> None:
        """Remember many states at once, keyed by `UUID.int`, evicting the oldest past the size."""
        cached, unknown = self._states, self.unknown
        for key, state in states:
            cached.pop(key, None)
            cached[key] = state
            if unknown:
                unknown.discard(key)
        evict = cached.popitem
        for _ in range(len(cached) - self._size):
            evict(last=False)
            self.complete(None)

    def forget(self, streams: Iterable[UUID], *, names: bool = True) -> None:
        """Drop states that may be stale (another writer changed their streams), and every
        name unless `names` is False (only a merge changes what a known name resolves to).

        While the cache is complete, the streams become `unknown`: read when next needed."""
        cached, unknown = self._states, self.unknown
        complete = self.complete_at is not None
        for stream in streams:
            key = stream.int
            cached.pop(key, None)
            if complete:
                unknown.add(key)
        if names:
            self._names.clear()
        if len(unknown) > self._size:
            self.complete(None)

    def complete(self, at: int | None) -> None:
        """Say every stream of the log at position `at` is cached or `unknown` (None: not
        known, and `unknown` is emptied)."""
        self.complete_at = at
        if at is None:
            self.unknown.clear()

    def update(self, other: StateCache) -> None:
        """Take every state and name of another cache (newer than ours)."""
        self.put_all(other._states.items())
        self._names.clear()
        self._names.update(other._names)
        self.complete(None)

    def empty(self) -> bool:
        """Whether no state and no name is cached."""
        return not self._states and not self._names

    def __contains__(self, stream: UUID) -> bool:
        return stream.int in self._states

    def __len__(self) -> int:
        return len(self._states)

    def streams(self) -> list[int]:
        """The cached streams' `UUID.int` keys, least recently written first."""
        return list(self._states)
