"""Events for log tests: one of each kind the log stores differently (keyed or not)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from apexmem.events import FactsRetrieved
from apexmem.events.episode import MessageRecorded
from apexmem.events.fact import FactAsserted
from apexmem.events.located import located_id

WHEN = datetime(2024, 5, 1, tzinfo=UTC)


def event(
    kind: int, item: UUID, stream: UUID, version: int
) -> FactAsserted | MessageRecorded | FactsRetrieved:
    """A fact (0) or a message (1), its id located at `version` of `stream`, or an event
    with no id to find it by (2), about `item`."""
    if kind == 0:
        return FactAsserted(
            fact_id=located_id(stream, version),
            subject_id=item,
            relation="knows",
            edge_type="semantic",
            fact="someone knows someone",
            confidence=0.5,
            valid_from=WHEN,
            observed_at=WHEN,
            outcome="created",
        )
    if kind == 1:
        return MessageRecorded(
            message_id=located_id(stream, version), speaker="user", text="hello", at=WHEN
        )
    return FactsRetrieved(fact_ids=[item])
