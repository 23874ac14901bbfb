"""The links in an audit: a fact's history shows the links told from or to its versions."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from sqlalchemy import or_, select

from apexmem.domain.links import link_stream
from apexmem.events.fact import FactAsserted
from apexmem.events.link import FactLinked
from apexmem.events.ports import Log
from apexmem.readmodels import ReadModels
from apexmem.readmodels.tables import fact_links
from apexmem.replay.audit import HistoryEntry, history_entry

__all__ = ["links_of", "with_links"]

_CHUNK = 400


def links_of(log: Log, store: ReadModels, fact_ids: set[UUID]) -> list[HistoryEntry]:
    """Every `fact-linked.v1` naming one of these fact versions, oldest first (the pairs
    are found in the read models, the events read from their streams)."""
    pairs: set[tuple[UUID, UUID]] = set()
    ids = sorted(fact_ids)
    with store.read() as connection:
        for i in range(0, len(ids), _CHUNK):
            chunk = ids[i : i + _CHUNK]
            query = select(fact_links.c.source_id, fact_links.c.target_id).where(
                or_(fact_links.c.source_id.in_(chunk), fact_links.c.target_id.in_(chunk))
            )
            pairs.update((s, t) for s, t in connection.execute(query))
    streams = sorted({link_stream(s, t) for s, t in pairs})
    found = log.read_streams(streams) if streams else {}
    events = sorted(
        (
            e
            for stream in found.values()
            for e in stream
            if isinstance(e.data, FactLinked) and {e.data.source, e.data.target} & fact_ids
        ),
        key=lambda e: e.position,
    )
    chains = log.chains([e.position for e in events])
    return [history_entry(e, chains.get(e.position, b"")) for e in events]


def with_links(
    log: Log, store: ReadModels, ready: Callable[[], None], entries: list[HistoryEntry]
) -> list[HistoryEntry]:
    """`entries` (a history) with the links naming the fact versions they assert, in
    position order."""
    fact_ids = {e.data.fact_id for e in entries if isinstance(e.data, FactAsserted)}
    if not fact_ids:
        return entries
    ready()
    told = {e.position for e in entries}
    links = [e for e in links_of(log, store, fact_ids) if e.position not in told]
    return sorted([*entries, *links], key=lambda e: e.position) if links else entries
