"""Audit: every event of a stream with its position, time, provenance and chain hash."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec
from sqlalchemy import Connection, select

from apexmem.domain.identities import alias_id
from apexmem.events.envelope import RecordedEvent
from apexmem.events.ports import Log
from apexmem.readmodels import find_entities, slots_of
from apexmem.readmodels.tables import aliases

__all__ = ["HistoryEntry", "entity_streams", "history_entry", "history_of"]


class HistoryEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One event as an operator audits it."""

    position: int
    recorded_at: datetime
    stream_id: UUID
    version: int
    tag: str
    actor: str | None
    episode: str | None
    cause: str | None
    chain: str
    data: Any


def entity_streams(
    connection: Connection, name: str, *, entity_type: str | None = None
) -> list[UUID]:
    """The streams of an entity's history: its own (and merged ones'), its names, its slots.

    Archived (evicted) entities are found too: the log and `history` keep what eviction
    hides. Empty when no entity has that name.
    """
    found = find_entities(connection, name, entity_type=entity_type, include_archived=True)
    ids = [m for row in found for m in (row.entity_id, *row.merged)]
    if not ids:
        return []
    names = connection.execute(
        select(aliases.c.entity_type, aliases.c.alias).where(aliases.c.entity_id.in_(ids))
    ).all()
    return [*ids, *(alias_id(t, a) for t, a in names), *slots_of(connection, ids)]


def history_of(log: Log, streams: list[UUID]) -> list[HistoryEntry]:
    """Every event of these streams, oldest first, with chain hashes."""
    found = log.read_streams(streams)
    events = sorted((e for s in found.values() for e in s), key=lambda e: e.position)
    chains = log.chains([e.position for e in events])
    return [history_entry(e, chains.get(e.position, b"")) for e in events]


def history_entry(event: RecordedEvent, chain: bytes, data: object = None) -> HistoryEntry:
    """One event as history shows it, with its chain hash (and `data` in place of the
    event's own, when a history shows only part of it)."""
    return HistoryEntry(
        position=event.position,
        recorded_at=event.recorded_at,
        stream_id=event.stream_id,
        version=event.version,
        tag=event.tag,
        actor=event.actor,
        episode=event.episode,
        cause=event.cause,
        chain=chain.hex(),
        data=event.data if data is None else data,
    )
