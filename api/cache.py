"""A bounded LRU map of stream states, shared by the write path's batches."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Final
from uuid import UUID

__all__ = ["StateCache"]

_DEFAULT_SIZE: Final = 200_000


class StateCache:
    """Stream id to folded state; the least recently used states leave first."""

    def __init__(self, size: int = _DEFAULT_SIZE) -> None:
        self._size = size
        self._states: OrderedDict[UUID, object] = OrderedDict()

    def get(self, stream: UUID) -> object | None:
        """The cached state of a stream, if any."""
        state = self._states.get(stream)
        if state is not None:
            self._states.move_to_end(stream)
        return state

    def put(self, stream: UUID, state: object) -> None:
        """Remember a stream's state, evicting the oldest past the size."""
        self._states[stream] = state
        self._states.move_to_end(stream)
        while len(self._states) > self._size:
            self._states.popitem(last=False)

    def forget(self, streams: Iterable[UUID]) -> None:
        """Drop states that may be stale (after a concurrency conflict)."""
        for stream in streams:
            self._states.pop(stream, None)

    def __contains__(self, stream: UUID) -> bool:
        return stream in self._states
