"""The endpoints beyond facts, messages and queries: fact links, an entity's episodes,
communities, merges, status and the export of the log in the ingest format."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from litestar import Controller, get, post
from litestar.di import Provide
from litestar.params import JSONBody, QueryParameter
from litestar.response import Stream

from apexmem import operations
from apexmem.domain.types import EntityType
from apexmem.server.body import StrictBody
from apexmem.server.routes import (
    _READ,
    _WRITE,
    IdempotencyKey,
    KnownAt,
    Position,
    Query,
    TenantMemory,
    _given,
    _tenant,
    _within_log,
)
from apexmem.service.fact_links import FactGraph, FactLink
from apexmem.service.results import MergeRef
from apexmem.service.status import Status
from apexmem.wire import (
    CommunitiesIn,
    CommunitiesOut,
    EpisodesIn,
    EpisodesOut,
    FactGraphIn,
    LinkIn,
    MergeIn,
    convert,
)

__all__ = ["OperationsApi"]

_Fact = Annotated[
    str,
    QueryParameter(description="A fact id, or the short id the CLI prints (a unique prefix)."),
]
_Depth = Annotated[
    int, QueryParameter(description="Links walked out from the fact (1 to 3).", ge=1, le=3)
]
_Entity = Annotated[
    str, QueryParameter(description="An entity's name (any case, aliases too), else a prefix.")
]
_EntityType = Annotated[
    EntityType | None,
    QueryParameter(description="The entity's type, when the name is ambiguous."),
]
_Limit = Annotated[int, QueryParameter(description="At most this many communities.", ge=1, le=100)]
_Top = Annotated[
    int, QueryParameter(description="Best-connected members shown per community.", ge=1, le=50)
]


class OperationsApi(Controller):
    """Fact links, episodes, communities, merges, status and export."""

    path = ""
    dependencies = {"tenant_memory": Provide(_tenant, sync_to_thread=False)}

    @post("/links", dto=StrictBody[LinkIn], operation_id="linkFacts", **_WRITE)
    def link(
        self,
        data: JSONBody[LinkIn],
        tenant_memory: TenantMemory,
        idempotency_key: IdempotencyKey = None,
    ) -> FactLink:
        """Link two fact versions: source supersedes, is caused_by, part_of, related_to or
        depends_on target; the same link again with the same strength writes nothing."""
        with tenant_memory.memory() as memory:
            return operations.link(memory, data)

    @get("/fact-graph", operation_id="factGraph", **_READ)
    def fact_graph(
        self,
        request: Query,
        tenant_memory: TenantMemory,
        *,
        fact: _Fact,
        depth: _Depth = 1,
        known_at: KnownAt = None,
    ) -> FactGraph:
        """The links from and to a fact, depth hops out, and the facts they reach."""
        asked = convert(FactGraphIn, _given(request, locals()))
        with tenant_memory.memory() as memory:
            return operations.fact_graph(memory, asked)

    @get("/episodes", operation_id="episodesOfEntity", **_READ)
    def episodes(
        self,
        request: Query,
        tenant_memory: TenantMemory,
        *,
        entity: _Entity,
        entity_type: _EntityType = None,
        known_at: KnownAt = None,
        position: Position = None,
    ) -> EpisodesOut:
        """The episodes (conversations) that mentioned an entity, first mentioned first."""
        asked = convert(EpisodesIn, _given(request, locals()))
        with tenant_memory.memory() as memory:
            _within_log(memory, asked.position)
            return operations.episodes(memory, asked)

    @get("/communities", operation_id="communities", **_READ)
    def communities(
        self, request: Query, tenant_memory: TenantMemory, *, limit: _Limit = 50, top: _Top = 5
    ) -> CommunitiesOut:
        """Live communities, largest first, with summaries and best-connected members."""
        asked = convert(CommunitiesIn, _given(request, locals()))
        with tenant_memory.memory() as memory:
            return operations.communities(memory, asked)

    @post("/merges", dto=StrictBody[MergeIn], operation_id="mergeEntities", **_WRITE)
    def merge(
        self,
        data: JSONBody[MergeIn],
        tenant_memory: TenantMemory,
        idempotency_key: IdempotencyKey = None,
    ) -> MergeRef:
        """Merge entity source forward into target (same type); its names keep resolving."""
        with tenant_memory.memory() as memory:
            return operations.merge(memory, data)

    @get("/status", operation_id="status", **_READ)
    def status(self, tenant_memory: TenantMemory) -> Status:
        """Counts, each projection's lag, the settings that shape recall, versions; no data
        (a read token, as every read: the counts are the memory's)."""
        with tenant_memory.memory() as memory:
            return memory.status()

    @get(
        "/export",
        operation_id="export",
        media_type="application/jsonl",
        sync_to_thread=False,
        responses=_READ["responses"],
        tags=["read"],
    )
    def export(self, tenant_memory: TenantMemory) -> Stream:
        """The log as JSON lines in the ingest format (`apexmem export`), streamed: `POST`
        them to another memory's ingest, or read them with ordinary tools."""
        return Stream(_export_lines(tenant_memory), media_type="application/jsonl")


def _export_lines(tenant: Any) -> Iterator[bytes]:
    from apexmem.cli.export import export_lines

    with tenant.memory() as memory:
        yield from export_lines(memory.events())
