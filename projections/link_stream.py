"""The fact-link stream folded: the write-side state a `link` command is decided from (pure)."""

from __future__ import annotations

from uuid import UUID

import msgspec

from apexmem.events.base import Event
from apexmem.events.link import FactLinked

__all__ = ["LinkState", "evolve_link"]


class LinkState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A pair's link stream folded: each (source, target, type) linked, latest strength."""

    version: int = 0
    held: dict[tuple[UUID, UUID, str], float] = msgspec.field(default_factory=dict)


def evolve_link(state: LinkState, event: Event) -> LinkState:
    """Apply one fact-link-stream event (an erased one only counts as a version)."""
    if isinstance(event, FactLinked):
        held = {**state.held, (event.source, event.target, event.link_type): event.strength}
        return LinkState(version=state.version + 1, held=held)
    return LinkState(version=state.version + 1, held=state.held)
