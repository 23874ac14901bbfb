"""The fact-link projector: a `fact-linked.v1` as its row of the `fact_links` table (pure)."""

from __future__ import annotations

from typing import Any

from apexmem.events.envelope import RecordedEvent
from apexmem.events.link import FactLinked

__all__ = ["link_row"]


def link_row(event: RecordedEvent, data: FactLinked) -> dict[str, Any]:
    """The row a link event adds: every link told is kept, the latest of a link holding."""
    return {
        "position": event.position,
        "source_id": data.source,
        "target_id": data.target,
        "link_type": data.link_type,
        "strength": data.strength,
        "origin": data.origin,
        "recorded_at": event.recorded_at,
    }
