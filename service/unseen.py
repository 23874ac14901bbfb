"""What a read model does not show yet, as one write batch sees it.

A batch deciding under the write lock compares against a read model (the vector index, the
graph) that may lag the log: it must also look at the events past the projection's position
and at the events the batch itself has staged so far. Both are folded into one accumulator
per batch: the log's tail on the batch's first look (the log cannot change while the batch
holds the lock), then, on every look, the events the batch staged since the last one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar
from weakref import WeakKeyDictionary

from apexmem.events.envelope import NewEvent, RecordedEvent
from apexmem.events.ports import Log
from apexmem.readmodels.ports import ReadModels
from apexmem.replay.projections import unprojected
from apexmem.service.staging import Staging

__all__ = ["Unseen"]

S = TypeVar("S")
Fold = Callable[[S, Iterable[RecordedEvent | NewEvent]], None]


class Unseen(Generic[S]):
    """Per batch, an accumulator `S` of the events `projection` has not applied yet: the
    log's tail past its position (events of `tags`), then the batch's own events."""

    def __init__(
        self, projection: str, *, tags: Sequence[str], new: Callable[[], S], fold: Fold[S]
    ) -> None:
        self._projection, self._tags, self._new, self._fold = projection, tags, new, fold
        # Keyed weakly by the batch: each is read once in all, not once per command.
        self._batches: WeakKeyDictionary[Staging, tuple[S, list[int]]] = WeakKeyDictionary()

    def of(self, staging: Staging, log: Log, store: ReadModels) -> S:
        """The batch's accumulator, brought up to date with what it staged since last asked
        (`log` and `store` are the batch's: read on its first look only)."""
        held = self._batches.get(staging)
        if held is None:
            held = self._batches[staging] = (self._new(), [0])
            with store.read() as connection:
                tail = unprojected(log, connection, self._projection, tags=self._tags)
            self._fold(held[0], tail)
        seen, scanned = held
        self._fold(seen, staging.events[scanned[0] :])
        scanned[0] = len(staging.events)
        return seen
