"""The vectors projector: which item each event gives a text to embed (pure).

Entities are embedded by display name and summary, facts by their sentence, messages by
their text. A later observation that changes an entity's summary gives it a new text, and
a reinforcement in other words a fact's.
"""

from __future__ import annotations

from typing import Final, Literal
from uuid import UUID

import msgspec

from apexmem.domain.embedding import entity_text
from apexmem.events.entity import EntityObserved
from apexmem.events.envelope import RecordedEvent
from apexmem.events.episode import MessageRecorded
from apexmem.events.fact import FactAsserted, FactReinforced

__all__ = ["KINDS", "TEXT_TAGS", "Kind", "VectorText", "text_of"]

Kind = Literal["entity", "fact", "message"]
KINDS: Final[tuple[Kind, ...]] = ("entity", "fact", "message")


class VectorText(msgspec.Struct, frozen=True, gc=False):
    """The text an item is embedded by."""

    kind: Kind
    item_id: UUID
    text: str


TEXT_TAGS: Final = tuple(
    str(kind.__struct_config__.tag)
    for kind in (FactAsserted, FactReinforced, MessageRecorded, EntityObserved)
)
"""The tags of the only events `text_of` finds a text in: a catch-up reads no others."""


def text_of(event: RecordedEvent) -> VectorText | None:
    """The item text an event sets, or None when it sets none."""
    data = event.data
    if isinstance(data, FactAsserted):
        return VectorText("fact", data.fact_id, data.fact)
    if isinstance(data, FactReinforced) and data.fact is not None:  # told in other words
        return VectorText("fact", data.fact_id, data.fact)
    if isinstance(data, MessageRecorded):
        return VectorText("message", data.message_id, data.text)
    if isinstance(data, EntityObserved) and (event.version == 1 or data.summary is not None):
        return VectorText("entity", data.entity_id, entity_text(data.name, data.summary))
    return None
