"""Typed links between facts (seed 004), their weights in recall (seed 003), and the rule
that turns facts recalled together into `related_to` links. Pure: no I/O, no clock."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Final
from uuid import UUID, uuid5

from apexmem.domain.identities import NS
from apexmem.events.errors import ValidationError
from apexmem.events.link import LINK_TYPES, FactLinked, LinkType

__all__ = [
    "LINK_TYPE_WEIGHTS",
    "MAX_GRAPH_DEPTH",
    "co_occurring",
    "decide_link",
    "link_stream",
    "links_held",
    "parse_link_type",
    "parse_strength",
]

LINK_TYPE_WEIGHTS: Final[dict[str, float]] = {
    "caused_by": 1.5,
    "supersedes": 1.2,
    "related_to": 1.0,
    "depends_on": 0.9,
    "part_of": 0.7,
}
"""Seed 003's edge-type weights, by link type: caused_by, supersedes and depends_on as the
table gives them; related_to is its semantic-neighbour baseline (similar_to, 1.0); part_of
is its hierarchical narrowing (specializes, 0.7)."""
MAX_GRAPH_DEPTH: Final = 3
"""How far `fact_graph` walks at most (seed 004: depth <= 3)."""


def parse_link_type(field: str, value: object) -> LinkType:
    """A link type given in any case (`CAUSED_BY`, `caused_by`), stored lowercase."""
    if isinstance(value, str):
        lowered = value.strip().lower()
        for known in LINK_TYPES:
            if lowered == known:
                return known
    shown = ", ".join(t.upper() for t in LINK_TYPES)
    raise ValidationError(field, value, f"is not a link type (one of {shown}, any case)")


def parse_strength(field: str, value: object) -> float:
    """A link's strength: a number above 0 and at most 1 (seed 004: 0.0-1.0; 0 is no link)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and 0.0 < number <= 1.0:
            return number
    raise ValidationError(field, value, "is not a number above 0 and at most 1")


def link_stream(a: UUID, b: UUID) -> UUID:
    """The stream of every link between two facts, whichever way they point."""
    low, high = sorted((a, b))
    return uuid5(NS, f"fact-link/{low}/{high}")


def links_held(events: Iterable[object]) -> dict[tuple[UUID, UUID, str], float]:
    """A pair's stream folded: each (source, target, type) linked, with its latest strength."""
    held: dict[tuple[UUID, UUID, str], float] = {}
    for event in events:
        if isinstance(event, FactLinked):
            held[(event.source, event.target, event.link_type)] = event.strength
    return held


def decide_link(
    held: dict[tuple[UUID, UUID, str], float],
    source: UUID,
    target: UUID,
    link_type: LinkType,
    strength: float,
) -> FactLinked | None:
    """The event linking `source` to `target`, or None when that link already holds with
    that strength (told again, it changes nothing)."""
    if source == target:
        raise ValidationError(
            "target", str(target), "is the source fact itself (a fact links to another)"
        )
    if held.get((source, target, link_type)) == strength:
        return None
    return FactLinked(source=source, target=target, link_type=link_type, strength=strength)


def co_occurring(
    recalls: Iterable[Sequence[UUID]], *, at_least: int
) -> list[tuple[UUID, UUID, int]]:
    """The pairs of facts returned together by at least `at_least` of these recalls, each
    as (smaller id, larger id, recalls), most recalled first (ties by ids)."""
    counts: Counter[tuple[UUID, UUID]] = Counter()
    for fact_ids in recalls:
        for pair in itertools.combinations(sorted(set(fact_ids)), 2):
            counts[pair] += 1
    kept = [(a, b, n) for (a, b), n in counts.items() if n >= at_least]
    return sorted(kept, key=lambda t: (-t[2], t[0], t[1]))
