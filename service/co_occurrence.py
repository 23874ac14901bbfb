"""Co-occurrence links: facts recalled together often enough are linked `related_to`.

The usage pass (`decay_usage`) looks at the recalls recorded since the previous pass (each
recall's `facts-retrieved.v1`, so each recall is counted by one pass only). A pair of facts
returned together by at least `[memory.graph.fact_links] co_occurrence_recalls` of them
gets one `fact-linked.v1`: `related_to`, from the smaller id to the larger, of strength
`co_occurrence_weight` (seed 004's coOccurrenceWeight, 0.3), on the pair's stream in the
pass's own append. A pair already linked in any way is left as it is, so a pair is linked
by co-occurrence once; recall then brings each fact with the other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final
from uuid import UUID

import msgspec

from apexmem.domain.links import co_occurring, link_stream
from apexmem.domain.settings import FactLinkSettings
from apexmem.events.envelope import RecordedEvent
from apexmem.events.errors import ConcurrencyError
from apexmem.events.link import FactLinked
from apexmem.events.policy import FactsRetrieved
from apexmem.events.ports import LockedLog, Log

__all__ = ["CoOccurrence", "Recalls"]

_RETRIEVED: Final = ("facts-retrieved.v1",)


class Recalls(msgspec.Struct, frozen=True, kw_only=True):
    """The facts each recall returned, after the pass at `after`, read up to `seen`."""

    after: int
    seen: int
    fact_ids: list[list[UUID]]


class CoOccurrence:
    """Plans a usage pass's co-occurrence links from the recalls of its window."""

    def __init__(self, log: Log, settings: FactLinkSettings) -> None:
        self._log = log
        self._weight = settings.co_occurrence_weight
        self._at_least = settings.co_occurrence_recalls

    def recalls(self, after: int) -> Recalls:
        """The recalls recorded after position `after`, read without the write lock."""
        seen = self._log.last_position()
        found = self._log.read(start=after + 1, stop=seen, tags=_RETRIEVED) if seen > after else ()
        return Recalls(after=after, seen=seen, fact_ids=_fact_ids(found))

    def links(
        self, log: LockedLog, recalls: Recalls, *, after: int
    ) -> tuple[dict[UUID, list[RecordedEvent]], list[tuple[UUID, FactLinked]]]:
        """Under the lock: the window's links on their pairs' streams (the recalls appended
        since `recalls.seen` counted too), and those streams as read, to number on from.

        Raises ConcurrencyError when another pass ran since the recalls were read."""
        if recalls.after != after:
            raise ConcurrencyError("a usage pass ran since its window was read")
        tail = _fact_ids(log.read_after(recalls.seen))
        pairs = co_occurring([*recalls.fact_ids, *tail], at_least=self._at_least)
        if not pairs:
            return {}, []
        streams = {(a, b): link_stream(a, b) for a, b, _ in pairs}
        found = log.read_streams(list(streams.values()))
        planned = [
            (
                streams[(a, b)],
                FactLinked(
                    source=a,
                    target=b,
                    link_type="related_to",
                    strength=self._weight,
                    origin="co-occurrence",
                    recalls=n,
                ),
            )
            for a, b, n in pairs
            if not found.get(streams[(a, b)])
        ]
        return found, planned


def _fact_ids(events: Iterable[RecordedEvent]) -> list[list[UUID]]:
    return [e.data.fact_ids for e in events if isinstance(e.data, FactsRetrieved)]
