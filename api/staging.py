"""One write batch in progress: stream states as the batch has changed them, and its events."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, Literal
from uuid import UUID

from apexmem.cache import StateCache
from apexmem.domain.state import AliasState, EntityState, EpisodeState, PolicyState, SlotState
from apexmem.events.base import Event
from apexmem.events.fact import FactAsserted
from apexmem.events.log import LogAccess, NewEvent
from apexmem.projections.streams import (
    evolve_alias,
    evolve_entity,
    evolve_episode,
    evolve_policy,
    evolve_slot,
    fold,
)

__all__ = ["Kind", "Meta", "Staging", "load_states"]

Kind = Literal["entity", "alias", "slot", "episode", "policy"]
Meta = dict[str, str | None]

_FOLDS: Final[dict[str, tuple[Any, Callable[[Any, Event], Any]]]] = {
    "entity": (EntityState(), evolve_entity),
    "alias": (AliasState(), evolve_alias),
    "slot": (SlotState(), evolve_slot),
    "episode": (EpisodeState(), evolve_episode),
    "policy": (PolicyState(), evolve_policy),
}


def load_states(log: LogAccess, cache: StateCache, kind: Kind, streams: Iterable[UUID]) -> None:
    """Fold every stream not yet cached from the log, in one read, and cache it."""
    missing = [s for s in dict.fromkeys(streams) if s not in cache]
    if not missing:
        return
    initial, evolve = _FOLDS[kind]
    found = log.read_streams(missing)
    for stream in missing:
        cache.put(stream, fold(evolve, initial, (e.data for e in found.get(stream, ()))))


class Staging:
    """States read or changed by the batch, and the events it will append, in order."""

    def __init__(self, log: LogAccess, cache: StateCache) -> None:
        self._log = log
        self.cache = cache
        self._states: dict[UUID, Any] = {}
        self._kinds: dict[UUID, Kind] = {}
        self.events: list[NewEvent] = []
        self.fact_slots: dict[UUID, UUID] = {}
        self.resolved: dict[tuple[str, str], Any] = {}
        """Names already resolved in this batch: (name, type as given) to the entity."""

    def state(self, kind: Kind, stream: UUID) -> Any:
        """The stream's state as this batch sees it (loading it when nothing has it yet)."""
        staged = self._states.get(stream)
        if staged is not None:
            return staged
        cached = self.cache.get(stream)
        if cached is None:
            load_states(self._log, self.cache, kind, [stream])
            cached = self.cache.get(stream)
        self._states[stream] = cached
        self._kinds[stream] = kind
        return cached

    def emit(self, kind: Kind, stream: UUID, events: Iterable[Event], meta: Meta) -> int:
        """Stage events on a stream at its next versions; returns the index of the last one."""
        state = self.state(kind, stream)
        evolve = _FOLDS[kind][1]
        for event in events:
            state = evolve(state, event)
            self.events.append(
                NewEvent(stream_id=stream, version=state.version, data=event, **meta)
            )
            if isinstance(event, FactAsserted):
                self.fact_slots[event.fact_id] = stream
        self._states[stream] = state
        return len(self.events) - 1

    def touched(self) -> list[UUID]:
        """Every stream this batch read or changed."""
        return list(self._states)

    def commit(self) -> None:
        """After a successful append: the batch's states become the cache's."""
        for stream, state in self._states.items():
            self.cache.put(stream, state)
