"""The extraction verdict on one message, recorded in its episode's stream.

What an extractor found is recorded where it belongs (entities observed in their streams,
facts asserted in their slots with the message as provenance, `entities-mentioned.v1` in
the episode); this event closes the message's extraction, so a backfill never reads the
message again and replay never asks an extractor anything.
"""

from __future__ import annotations

from uuid import UUID

from apexmem.events.base import Event

__all__ = ["MessageExtracted"]


class MessageExtracted(Event, frozen=True, kw_only=True, tag="message-extracted.v1"):
    """A message of the episode was read by an extractor (or refused by the injection check,
    or skipped by the RPE gate)."""

    message_id: UUID
    extractor: str
    """Which extractor (and version) read it, e.g. `heuristic.v1`."""
    fact_ids: list[UUID] = []
    """Fact versions asserted or reinforced from the message."""
    flagged: str | None = None
    """The prompt-injection rule the text matched: nothing was extracted from it."""
    surprise: float | None = None
    """The RPE gate's surprise score when it skipped the message as saying little new
    (below `[memory.graph.rpe] threshold`): nothing was extracted from it."""
