"""Audit on the write side's terms: the history of a fact, a slot or an entity, by name."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from apexmem.events.errors import NotFoundError, ValidationError
from apexmem.events.ports import Log
from apexmem.readmodels import ReadModels
from apexmem.replay.audit import HistoryEntry, entity_streams, history_of
from apexmem.replay.fading import with_fades
from apexmem.replay.links import with_links
from apexmem.service.arguments import uuid_of
from apexmem.service.forgetting import ERASURES, erased_entity_streams, erasures_of

__all__ = ["history"]


def history(
    log: Log,
    store: ReadModels,
    *,
    ready: Callable[[], None],
    fact: UUID | str | None = None,
    entity: str | None = None,
    entity_type: str | None = None,
    slot: UUID | str | None = None,
) -> list[HistoryEntry]:
    """Every event of a fact's slot, a slot, or an entity (named by exactly one of them),
    oldest first, with provenance; an entity is looked up in the read models."""
    named = [k for k, v in (("fact", fact), ("entity", entity), ("slot", slot)) if v]
    if len(named) != 1:
        raise ValidationError(
            "history", named, "names what to show by exactly one of fact, entity and slot"
        )
    if fact is not None:
        found = log.find(f"fact:{uuid_of('fact', fact)}")
        if found is None:
            raise NotFoundError(f"fact: no fact {fact} in this memory")
        entries = with_fades(log, [found.stream_id], history_of(log, [found.stream_id]))
        return with_links(log, store, ready, entries)
    if slot is not None:
        slot_id = uuid_of("slot", slot)
        return with_links(log, store, ready, with_fades(log, [slot_id], history_of(log, [slot_id])))
    assert entity is not None
    ready()
    with store.read() as connection:
        streams = entity_streams(connection, entity, entity_type=entity_type)
    if not streams:
        return _forgotten(log, entity, entity_type)
    return with_links(log, store, ready, with_fades(log, streams, history_of(log, streams)))


def _forgotten(log: Log, entity: str, entity_type: str | None) -> list[HistoryEntry]:
    """The history of an entity erased by `forget`: its blanked records (positions and
    times) and the erasure events that blanked them."""
    streams = erased_entity_streams(log, entity, entity_type)
    if not streams:
        raise NotFoundError(f"entity: no entity named {entity!r}")
    by = set(erasures_of(log, set(streams)))
    erasures = [e for e in history_of(log, [ERASURES]) if e.position in by]
    return sorted([*history_of(log, streams), *erasures], key=lambda e: e.position)
