"""One write batch in progress: stream states as the batch has changed them, and its events."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, Literal
from uuid import UUID

import msgspec

from apexmem.domain.state import AliasState, EntityState, EpisodeState, PolicyState, SlotState
from apexmem.events.base import Event
from apexmem.events.envelope import NewEvent
from apexmem.events.fact import FactAsserted
from apexmem.events.ports import LogReads
from apexmem.projections.link_stream import LinkState, evolve_link
from apexmem.projections.streams import (
    evolve_alias,
    evolve_entity,
    evolve_episode,
    evolve_policy,
    evolve_slot,
    fold,
)
from apexmem.service.cache import StateCache

if TYPE_CHECKING:
    from apexmem.service.resolution import SimilarWrites

__all__ = ["Kind", "Meta", "Staging"]

Kind = Literal["entity", "alias", "slot", "episode", "policy", "link"]


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
    "link": (LinkState(), evolve_link),
}


def _read_states(log: LogReads, kind: Kind, streams: list[UUID]) -> list[tuple[int, Any]]:
    """Streams folded from the log in one read, keyed by `UUID.int`."""
    initial, evolve = _FOLDS[kind]
    found = log.read_streams(streams)
    states = []
    for stream in streams:
        events = found.get(stream)  # most streams of a batch are new: nothing to fold
        state = initial if events is None else fold(evolve, initial, (e.data for e in events))
        states.append((stream.int, state))
    return states


class Staging:
    """States read or changed by the batch, and the events it will append, in order."""

    def __init__(
        self,
        log: LogReads,
        cache: StateCache,
        similar: SimilarWrites | None = None,
        *,
        complete: bool = False,
    ) -> None:
        self._log = log
        self.cache = cache
        self._complete = complete
        """Whether the cache holds every stream of the log: a stream it lacks is then new."""
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
        self._known: dict[tuple[str, str], Any] = {}
        """What `known_names` found (in the cache or this batch), for `known_name`."""
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
            [(_, cached)] = self._fetch(kind, [stream])
        self._states[key] = cached
        self._streams.append(stream)
        return cached

    def load(self, kind: Kind, streams: Iterable[UUID]) -> None:
        """Read every stream neither the batch nor the cache holds, in one read, into the batch.

        The states reach the cache when the batch commits, once, with the batch's changes.
        """
        staged = self._states
        missing = [s for s in self.cache.missing(streams) if s.int not in staged]
        if missing:
            staged.update(self._fetch(kind, missing))
            self._streams.extend(missing)

    def _fetch(self, kind: Kind, streams: list[UUID]) -> list[tuple[int, Any]]:
        """Streams the cache lacks, folded: new ones, when it holds all the log has."""
        if self._complete:
            # Should another writer have begun one of these streams after all, its
            # (stream, version) is taken and the append conflicts, as with a stale state.
            initial = _FOLDS[kind][0]
            unknown = self.cache.unknown
            read = [stream for stream in streams if stream.int in unknown] if unknown else []
            found = dict(_read_states(self._log, kind, read)) if read else {}
            return [(stream.int, found.get(stream.int, initial)) for stream in streams]
        return _read_states(self._log, kind, streams)

    def emit(self, kind: Kind, stream: UUID, events: Iterable[Event], meta: Meta) -> int:
        """Stage events on a stream at its next versions; returns the index of the last one."""
        state = self.state(kind, stream)
        evolve = _FOLDS[kind][1]
        staged = self.events
        for event in events:
            state = evolve(state, event)
            staged.append(
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
        return len(staged) - 1

    def known_name(self, name: str, kind: str) -> Any:
        """The existing entity a name resolved to in this batch or a committed one, if any."""
        pair = (name, kind)
        found = self._known.get(pair)
        if found is None:
            found = self.resolved.get(pair)
            if found is None and not self.merged:
                found = self.cache.name(name, kind)
        return found

    def known_names(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Any]:
        """`known_name` of many (name, type as given) pairs: the pairs that have one.

        The batch remembers them, so its `known_name` finds each in one look.
        """
        found = {} if self.merged else self.cache.names(pairs)
        found.update((pair, self.resolved[pair]) for pair in pairs if pair in self.resolved)
        self._known.update(found)
        return found

    def forget_names(self) -> None:
        """An entity was merged: resolve every name again, from this batch's states."""
        self.resolved.clear()
        self._known.clear()
        self.merged = True

    def touched(self) -> list[UUID]:
        """Every stream this batch read or changed."""
        return list(self._streams)

    def commit(self) -> None:
        """After a successful append: the batch's states and names become the cache's."""
        self.cache.put_all(self._states.items())
        self.cache.put_names(self.resolved, merged=self.merged)
