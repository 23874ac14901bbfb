"""The decay passes in an audit: a slot's history shows when its versions faded and came
back, from the passes on the decay stream that name them."""

from __future__ import annotations

from collections.abc import Collection
from uuid import UUID

import msgspec

from apexmem.domain.fading import FADES_ID
from apexmem.events.envelope import RecordedEvent
from apexmem.events.fading import FactsFaded
from apexmem.events.ports import Log
from apexmem.replay.audit import HistoryEntry, history_entry

__all__ = ["fades_of", "with_fades"]


def fades_of(log: Log, slots: Collection[UUID]) -> list[HistoryEntry]:
    """The decay passes that name a version of these slots, oldest first; each entry's
    data keeps only those versions (its position and chain hash are the whole pass's)."""
    wanted = set(slots)
    kept: list[tuple[RecordedEvent, FactsFaded]] = []
    for event in log.read_stream(FADES_ID):
        data = event.data
        if not isinstance(data, FactsFaded):  # an erased record
            continue
        faded = [f for f in data.faded if f.slot_id in wanted]
        restored = [f for f in data.restored if f.slot_id in wanted]
        if faded or restored:
            kept.append((event, msgspec.structs.replace(data, faded=faded, restored=restored)))
    chains = log.chains([event.position for event, _ in kept])
    return [
        history_entry(event, chains.get(event.position, b""), narrowed) for event, narrowed in kept
    ]


def with_fades(
    log: Log, streams: Collection[UUID], entries: list[HistoryEntry]
) -> list[HistoryEntry]:
    """`entries` (the history of `streams`) with the decay passes naming their slots, in
    position order."""
    fades = fades_of(log, streams)
    return sorted([*entries, *fades], key=lambda e: e.position) if fades else entries
