"""One write batch in progress: stream states as the batch has changed them, and its events."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, Literal
from uuid import UUID

import msgspec

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

if TYPE_CHECKING:
    from apexmem.resolution import SimilarWrites

__all__ = ["Kind", "Meta", "Staging", "load_states"]

Kind = Literal["entity", "alias", "slot", "episode", "policy"]


class Meta(msgspec.Struct, frozen=True, gc=False):
    """Who and what caused the events of one command: its envelope besides the stream."""

    actor: str | None
    episode: str | None
    cause: str | None


_FOLDS: Final[dict[str, tuple[Any, Callable[[Any, Event], Any]]]] = {
    "entity": (EntityState(), evolve_entity),
    "alias": (AliasState(), evolve_alias),
    "slot": (SlotState(), evolve_slot),
    "episode": (EpisodeState(), evolve_episode),
    "policy": (PolicyState(), evolve_policy),
}


def load_states(log: LogAccess, cache: StateCache, kind: Kind, streams: Iterable[UUID]) -> None:
    """Fold every stream not yet cached from the log, in one read, and cache it."""
    missing = cache.missing(streams)
    if not missing:
        return
    initial, evolve = _FOLDS[kind]
    found = log.read_streams(missing)
    cache.put_all(
        (stream.int, fold(evolve, initial, (e.data for e in found.get(stream, ()))))
        for stream in missing
    )


class Staging:
    """States read or changed by the batch, and the events it will append, in order."""

    def __init__(
        self, log: LogAccess, cache: StateCache, similar: SimilarWrites | None = None
    ) -> None:
        self._log = log
        self.cache = cache
        self.similar = similar
        """Similarity on the write path (resolution, belief revision); None when both are off."""
        # Keyed by UUID.int, like the cache: UUID.__hash__ runs in Python.
        self._states: dict[int, Any] = {}
        self._streams: list[UUID] = []
        self.events: list[NewEvent] = []
        self.fact_slots: dict[int, UUID] = {}
        """Facts asserted in this batch (by `fact_id.int`) to their slots."""
        self.resolved: dict[tuple[str, str], Any] = {}
        """Names resolved to existing entities in this batch: (name, type as given) to it."""
        self.merged = False
        """Whether this batch merged an entity: names resolved before may point elsewhere."""

    def state(self, kind: Kind, stream: UUID) -> Any:
        """The stream's state as this batch sees it (loading it when nothing has it yet)."""
        key = stream.int
        staged = self._states.get(key)
        if staged is not None:
            return staged
        cached = self.cache.get(stream)
        if cached is None:
            load_states(self._log, self.cache, kind, [stream])
            cached = self.cache.get(stream)
        self._states[key] = cached
        self._streams.append(stream)
        return cached

    def emit(self, kind: Kind, stream: UUID, events: Iterable[Event], meta: Meta) -> int:
        """Stage events on a stream at its next versions; returns the index of the last one."""
        state = self.state(kind, stream)
        evolve = _FOLDS[kind][1]
        for event in events:
            state = evolve(state, event)
            self.events.append(
                NewEvent(
                    stream_id=stream,
                    version=state.version,
                    data=event,
                    actor=meta.actor,
                    episode=meta.episode,
                    cause=meta.cause,
                )
            )
            if isinstance(event, FactAsserted):
                self.fact_slots[event.fact_id.int] = stream
        self._states[stream.int] = state
        return len(self.events) - 1

    def known_name(self, name: str, kind: str) -> Any:
        """The existing entity a name resolved to in this batch or a committed one, if any."""
        found = self.resolved.get((name, kind))
        if found is None and not self.merged:
            found = self.cache.name(name, kind)
        return found

    def forget_names(self) -> None:
        """An entity was merged: resolve every name again, from this batch's states."""
        self.resolved.clear()
        self.merged = True

    def touched(self) -> list[UUID]:
        """Every stream this batch read or changed."""
        return list(self._streams)

    def commit(self) -> None:
        """After a successful append: the batch's states and names become the cache's."""
        self.cache.put_all(self._states.items())
        self.cache.put_names(self.resolved, merged=self.merged)
