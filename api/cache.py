"""A bounded map of stream states, shared by the write path's batches."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final
from uuid import UUID

__all__ = ["StateCache"]

_DEFAULT_SIZE: Final = 200_000


class StateCache:
    """Stream id to folded state; past the size, the least recently written states leave first.

    Reads do not reorder entries (a plain dict keeps insertion order), which keeps the hot
    path cheap; writes move a stream to the back.
    """

    def __init__(self, size: int = _DEFAULT_SIZE) -> None:
        self._size = size
        self._states: dict[UUID, object] = {}

    def get(self, stream: UUID) -> object | None:
        """The cached state of a stream, if any."""
        return self._states.get(stream)

    def put(self, stream: UUID, state: object) -> None:
        """Remember a stream's state, evicting the oldest past the size."""
        states = self._states
        states.pop(stream, None)
        states[stream] = state
        if len(states) > self._size:
            for old in list(states)[: len(states) - self._size]:
                del states[old]

    def forget(self, streams: Iterable[UUID]) -> None:
        """Drop states that may be stale (after a concurrency conflict)."""
        for stream in streams:
            self._states.pop(stream, None)

    def update(self, other: StateCache) -> None:
        """Take every state of another cache (newer than ours)."""
        for stream, state in other._states.items():
            self.put(stream, state)

    def __contains__(self, stream: UUID) -> bool:
        return stream in self._states
