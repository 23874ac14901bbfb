"""The usage projector: A-MEM retrieval-count decay passes as read-model changes (pure).

A pass is recorded, never recomputed from a clock: it carries its factor and its cutoff,
so a rebuild multiplies the same counts by the same factor at the same point of the log.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from apexmem.events.envelope import RecordedEvent
from apexmem.events.policy import RetrievalCountsDecayed

__all__ = ["CountsDecayed", "counts_decayed"]


class CountsDecayed(msgspec.Struct, frozen=True, gc=False):
    """Multiply by `factor` (then truncate) the retrieval counts of facts last retrieved
    before `cutoff`, after every retrieval before this point of the log."""

    factor: float
    cutoff: datetime
    at: datetime
    position: int


def counts_decayed(event: RecordedEvent, data: RetrievalCountsDecayed) -> list[CountsDecayed]:
    """One decay pass of the usage stream."""
    return [CountsDecayed(data.factor, data.cutoff, event.recorded_at, event.position)]
