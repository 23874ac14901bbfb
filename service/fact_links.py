"""Typed links between facts on a Memory (seed 004's memory_link and memory_graph).

`link` appends one `fact-linked.v1` on the pair's stream (validated first: nothing is
written for a bad type, strength, a fact the memory does not hold, or a fact linked to
itself); told again with the same strength it writes nothing. `fact_graph` walks the links
from a fact both ways, up to three hops, in the read models as known at a moment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Literal
from uuid import UUID

import msgspec
from sqlalchemy import Connection

from apexmem.domain.links import (
    MAX_GRAPH_DEPTH,
    decide_link,
    link_stream,
    links_held,
    parse_link_type,
    parse_strength,
)
from apexmem.events.envelope import AppendResult, RecordedEvent
from apexmem.events.errors import NotFoundError, ValidationError
from apexmem.events.link import FactLinked, LinkType
from apexmem.events.ports import LockedLog, Log
from apexmem.readmodels import ReadModels
from apexmem.readmodels.fact_links import LinkRow, facts_by_id, links_of
from apexmem.readmodels.rows import FactRow
from apexmem.service.arguments import uuid_of
from apexmem.service.logs import get_logger
from apexmem.service.pipeline import Append, Pipeline, Versions

__all__ = ["FactGraph", "FactLink", "FactLinks", "fact_graph", "link_of_row"]

_logger = get_logger()


class FactLink(msgspec.Struct, frozen=True, kw_only=True):
    """A link between two fact versions: `source` stands to `target` as `link_type` says."""

    source: UUID
    target: UUID
    link_type: str
    """Lowercase: supersedes, caused_by, part_of, related_to or depends_on."""
    strength: float
    position: int
    """The log position of the event that last told it."""
    recorded_at: datetime
    origin: str = "told"
    """told (by a caller) or co-occurrence (by the usage pass)."""


class FactGraph(msgspec.Struct, frozen=True, kw_only=True):
    """The links around one fact, `depth` hops out, and the facts they reach."""

    fact_id: UUID
    depth: int
    links: list[FactLink]
    """Every link walked, nearest first."""
    facts: list[FactRow]
    """The fact itself, then the facts reached, nearest first."""
    hops: dict[UUID, int]
    """How many links away each fact reached is (the fact itself: 0)."""

    def direct(self) -> list[tuple[Literal["out", "in"], FactLink]]:
        """The fact's own links: `out` where it is the source, `in` where the target."""
        return [
            ("out" if link.source == self.fact_id else "in", link)
            for link in self.links
            if self.fact_id in (link.source, link.target)
        ]


def link_of_row(row: LinkRow) -> FactLink:
    """A read-model link row as the API shows it."""
    return FactLink(
        source=row.source_id,
        target=row.target_id,
        link_type=row.link_type,
        strength=row.strength,
        position=row.position,
        recorded_at=row.recorded_at,
        origin=row.origin,
    )


class FactLinks:
    """Links between facts: told, and walked."""

    def __init__(
        self, pipeline: Pipeline, *, log: Log, store: ReadModels, ready: Callable[[], None]
    ) -> None:
        self._pipeline = pipeline
        self._log = log
        self._store = store
        self._ready = ready

    def link(
        self,
        source: UUID | str,
        target: UUID | str,
        link_type: str,
        strength: float = 1.0,
        *,
        actor: str | None = None,
    ) -> FactLink:
        """Link `source` to `target` (see the module docstring); the link as it now holds."""
        kind = parse_link_type("link_type", link_type)
        weight = parse_strength("strength", strength)
        ends = uuid_of("source", source), uuid_of("target", target)
        if ends[0] == ends[1]:
            raise ValidationError(
                "target", str(ends[1]), "is the source fact itself (a fact links to another)"
            )
        for field, fact_id in zip(("source", "target"), ends, strict=True):
            if self._log.find(f"fact:{fact_id}") is None:
                raise NotFoundError(f"{field}: no fact {fact_id} in this memory")
        done = self._pipeline.run("link", lambda _: _Link(*ends, kind, weight, actor))
        _logger.info("facts.linked", **msgspec.structs.asdict(done))
        return done

    def fact_graph(
        self, fact: UUID | str, depth: int = 1, *, known_at: datetime | None = None
    ) -> FactGraph:
        """The links from and to `fact`, `depth` (1 to 3) hops out, as known at `known_at`."""
        return fact_graph(self._store, self._ready, fact, depth, known_at=known_at)


def fact_graph(
    store: ReadModels,
    ready: Callable[[], None],
    fact: UUID | str,
    depth: int = 1,
    *,
    known_at: datetime | None = None,
) -> FactGraph:
    """The links from and to `fact`, `depth` (1 to 3) hops out, in the read models as
    known at `known_at` (now when None)."""
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_GRAPH_DEPTH:
        raise ValidationError("depth", depth, f"is not a whole number from 1 to {MAX_GRAPH_DEPTH}")
    start = uuid_of("fact", fact)
    ready()
    with store.read() as connection:
        if start not in facts_by_id(connection, [start], known_at=known_at):
            raise NotFoundError(f"fact: no fact {start} in this memory")
        hops, walked = {start: 0}, _walk(connection, start, depth, known_at)
        for hop, link in walked:
            for end in (link.source_id, link.target_id):
                hops.setdefault(end, hop)
        rows = facts_by_id(connection, list(hops), known_at=known_at)
    reached = [rows[f] for f in sorted(hops, key=lambda f: (hops[f], str(f))) if f in rows]
    return FactGraph(
        fact_id=start,
        depth=depth,
        links=[link_of_row(link) for _, link in walked],
        facts=reached,
        hops={f: hops[f] for f in hops if f in rows},
    )


def _walk(
    connection: Connection, start: UUID, depth: int, known_at: datetime | None
) -> list[tuple[int, LinkRow]]:
    """The links within `depth` hops of `start`, each with the hop it was met at."""
    seen_facts, seen_links = {start}, set()
    frontier, walked = [start], []
    for hop in range(1, depth + 1):
        found = links_of(connection, frontier, known_at=known_at)
        frontier = []
        for link in found:
            if link.position in seen_links:
                continue
            seen_links.add(link.position)
            walked.append((hop, link))
            for end in (link.source_id, link.target_id):
                if end not in seen_facts:
                    seen_facts.add(end)
                    frontier.append(end)
        if not frontier:
            break
    return walked


class _Link:
    """One attempt at a link: decided from the pair's stream under the write lock."""

    def __init__(
        self, source: UUID, target: UUID, link_type: LinkType, strength: float, actor: str | None
    ) -> None:
        self._source, self._target, self._type = source, target, link_type
        self._strength, self._actor = strength, actor
        self._held: FactLink | None = None

    def decide(self, log: LockedLog) -> Append:
        stream = link_stream(self._source, self._target)
        events = log.read_stream(stream)
        event = decide_link(
            links_held(e.data for e in events),
            self._source,
            self._target,
            self._type,
            self._strength,
        )
        if event is None:
            self._held = _told(events, self._source, self._target, self._type)
            return Append()
        numbered = Versions.after({stream: events}, actor=self._actor)
        return Append(events=[numbered.event(stream, event)])

    def finish(self, appended: AppendResult | None) -> FactLink:
        if self._held is not None:
            return self._held
        assert appended is not None and appended.recorded_at is not None
        return FactLink(
            source=self._source,
            target=self._target,
            link_type=self._type,
            strength=self._strength,
            position=appended.positions[0],
            recorded_at=appended.recorded_at,
        )

    def conflicted(self) -> None:
        self._held = None


def _told(events: Sequence[RecordedEvent], source: UUID, target: UUID, kind: str) -> FactLink:
    """The latest event of a pair's stream that told this link."""
    for event in reversed(events):
        data = event.data
        if isinstance(data, FactLinked) and (data.source, data.target, data.link_type) == (
            source,
            target,
            kind,
        ):
            return FactLink(
                source=source,
                target=target,
                link_type=kind,
                strength=data.strength,
                position=event.position,
                recorded_at=event.recorded_at,
                origin=data.origin,
            )
    raise AssertionError("a link held is told by its stream")
