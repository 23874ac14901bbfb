"""Read-only questions the web explorer asks that the other endpoints do not answer.

Entity search, a slot's versions with their bitemporal picture, a conversation's events (the
messages a fact was learned from, with positions and chain hashes), and a recall that only
looks: `GET /recall` answers as `POST /recall` does but records no usage, so browsing a
memory never changes the retrieval counts that ranking reads.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, get
from litestar.di import Provide
from litestar.params import FromQuery, QueryParameter

from apexmem.bitemporal import timeline_svg
from apexmem.domain.identities import episode_id
from apexmem.domain.types import EntityType
from apexmem.events.timeutil import UtcDateTime
from apexmem.readmodels.rows import EntityRow, FactRow
from apexmem.replay.audit import HistoryEntry
from apexmem.server.routes import _READ, KnownAt, Query, TenantMemory, ValidAt, _given, _tenant
from apexmem.service.recalled import Recall
from apexmem.wire import convert

__all__ = ["EntitiesFound", "Episode", "LookupApi", "Timeline"]

_Count = Annotated[int, msgspec.Meta(ge=1, le=100)]
QueryText = Annotated[
    str | None,
    QueryParameter(name="query", description="A name, or the start of one (any case)."),
]
"""The `query` parameter (Litestar keeps the argument name `query` for all parameters)."""


class EntitiesFound(msgspec.Struct, frozen=True, kw_only=True):
    """Entities a name search found."""

    entities: list[EntityRow]


class Timeline(msgspec.Struct, frozen=True, kw_only=True):
    """Every version of a subject's relation, and the picture of them (SVG)."""

    subject: str
    relation: str
    versions: list[FactRow]
    """Newest valid_from first, each in the state known at `known_at` (else now)."""
    svg: str
    """One bar per version: valid time across, known time down."""


class Episode(msgspec.Struct, frozen=True, kw_only=True):
    """A conversation's events, oldest first: its start and every message recorded in it."""

    conversation: str
    stream_id: str
    events: list[HistoryEntry]
    """Each with its log position, transaction time, actor and chain hash; only those
    recorded by `known_at` when it is given."""


class _EpisodeIn(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    conversation: Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
    known_at: UtcDateTime | None = None


class _EntitiesIn(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    query: str | None = None
    entity_type: EntityType | None = None
    known_at: UtcDateTime | None = None
    limit: _Count = 20


class _TimelineIn(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    subject: str
    relation: str
    known_at: UtcDateTime | None = None
    valid_at: UtcDateTime | None = None


class _PeekIn(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    query: str
    limit: _Count | None = None
    valid_at: UtcDateTime | None = None
    known_at: UtcDateTime | None = None


class LookupApi(Controller):
    """Entity search, a slot's timeline and a recall without side effects."""

    path = ""
    dependencies = {"tenant_memory": Provide(_tenant, sync_to_thread=False)}

    @get("/entities", operation_id="entities", **_READ)
    def entities(
        self,
        request: Query,
        tenant_memory: TenantMemory,
        *,
        text: QueryText = None,
        entity_type: FromQuery[EntityType | None] = None,
        known_at: KnownAt = None,
        limit: FromQuery[int] = 20,
    ) -> EntitiesFound:
        """Entities named query (any case, aliases too), else those whose name starts with
        it; without a query, every entity in name order."""
        asked = convert(_EntitiesIn, _asked(request, locals()))
        with tenant_memory.memory() as memory:
            view = memory.as_of(known_at=asked.known_at)
            found = view.entities(asked.query, entity_type=asked.entity_type, limit=asked.limit)
        return EntitiesFound(entities=found)

    @get("/timeline", operation_id="timeline", **_READ)
    def timeline(
        self,
        request: Query,
        tenant_memory: TenantMemory,
        *,
        subject: FromQuery[str],
        relation: FromQuery[str],
        known_at: KnownAt = None,
        valid_at: ValidAt = None,
    ) -> Timeline:
        """Every version of the subject's relation (superseded, closed, withdrawn ones too)
        as known at known_at, and their bitemporal picture; valid_at is marked on it."""
        asked = convert(_TimelineIn, _asked(request, locals()))
        with tenant_memory.memory() as memory:
            view = memory.as_of(known_at=asked.known_at)
            rows = view.edge_history(subject=asked.subject, relation=asked.relation)
            now = asked.known_at or memory.clock()
        title = f"{asked.subject} {asked.relation}"
        svg = timeline_svg(rows, title=title, now=now, valid_at=asked.valid_at)
        return Timeline(subject=asked.subject, relation=asked.relation, versions=rows, svg=svg)

    @get("/episode", operation_id="episode", **_READ)
    def episode(
        self,
        request: Query,
        tenant_memory: TenantMemory,
        *,
        conversation: FromQuery[str],
        known_at: KnownAt = None,
    ) -> Episode:
        """A conversation's events (its messages: speaker, text, time, ref), oldest first,
        with positions, actors and chain hashes; those recorded by known_at when given."""
        asked = convert(_EpisodeIn, _asked(request, locals()))
        stream = episode_id(asked.conversation)
        with tenant_memory.memory() as memory:
            events = memory.history(slot=stream)
        if asked.known_at is not None:
            events = [e for e in events if e.recorded_at <= asked.known_at]
        return Episode(conversation=asked.conversation, stream_id=str(stream), events=events)

    @get("/recall", operation_id="peekRecall", **_READ)
    def peek(
        self,
        request: Query,
        tenant_memory: TenantMemory,
        *,
        text: Annotated[str, QueryParameter(name="query", description="The question.")],
        limit: FromQuery[int | None] = None,
        valid_at: ValidAt = None,
        known_at: KnownAt = None,
    ) -> Recall:
        """Recall as POST /recall does, recording no usage: for looking, not for an agent."""
        asked = convert(_PeekIn, _asked(request, locals()))
        with tenant_memory.memory() as memory:
            view = memory.as_of(valid_at=asked.valid_at, known_at=asked.known_at)
            return view.recall(asked.query, limit=asked.limit)


def _asked(request: Query, arguments: dict[str, Any]) -> dict[str, Any]:
    """The query parameters given, by name (`_given`), with the argument `text` under its
    parameter's name, `query`."""
    given = _given(request, arguments, renamed={"text": "query"})
    if "text" in given:
        given["query"] = given.pop("text")
    return given
