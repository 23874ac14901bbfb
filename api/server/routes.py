"""The endpoints: each decodes its request into a wire type and makes one `apexmem.calls` call."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Final
from uuid import UUID

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody, QueryParameter

from apexmem import calls, erasure
from apexmem.domain.types import EntityType
from apexmem.erasure import ForgetIn
from apexmem.events.errors import NotFoundError, ValidationError
from apexmem.memory import Memory
from apexmem.readmodels.rows import Subgraph
from apexmem.replay.diff import Diff
from apexmem.replay.verify import VerifyReport
from apexmem.server.auth import bearer_token
from apexmem.server.body import StrictBody
from apexmem.server.errors import PROBLEM_RESPONSES
from apexmem.server.tenants import ADMIN, READ, WRITE, Tenant, Tenants, allows
from apexmem.service.fading import FadePass
from apexmem.service.forgetting import ForgetReport
from apexmem.service.recalled import Recall
from apexmem.service.results import AliasRef, MemoryStats, MessageRef, RetractRef
from apexmem.wire import (
    AliasIn,
    DiffIn,
    FactsAboutIn,
    FactsFound,
    FactsIn,
    FactsOut,
    HistoryIn,
    HistoryOut,
    MessageIn,
    MessagesAdded,
    MessagesIn,
    RecallIn,
    RetractIn,
    TraverseIn,
    convert,
)

__all__ = ["MemoryApi"]

TenantMemory = NamedDependency[Tenant]
"""The memory a request reaches (the guard checked the token for it)."""
IdempotencyKey = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        required=False,
        description="Retrying with the same key and body returns the first result and "
        "writes nothing (1 to 255 visible ASCII characters).",
    ),
]
ValidAt = Annotated[
    str | None,
    QueryParameter(
        description="What was true in the world then (RFC 3339, with a zone).", format="date-time"
    ),
]
KnownAt = Annotated[
    str | None,
    QueryParameter(
        description="What the store had been told by then (RFC 3339, with a zone).",
        format="date-time",
    ),
]
Position = Annotated[
    int | None,
    QueryParameter(description="The log as it stood at this position (instead of known_at)."),
]
Moment = Annotated[
    str, QueryParameter(description="A time (RFC 3339, with a zone).", format="date-time")
]
Query = Request[Any, Any, Any]
_WRITE: Final[dict[str, Any]] = {
    "opt": {"scope": WRITE},
    "return_dto": None,
    "status_code": 200,
    "sync_to_thread": True,
    "responses": PROBLEM_RESPONSES,
    "tags": ["write"],
}
_ADMIN: Final[dict[str, Any]] = {**_WRITE, "opt": {"scope": ADMIN}}
"""A write only the admin's token may make (forget)."""
_READ: Final[dict[str, Any]] = {
    "sync_to_thread": True,
    "responses": PROBLEM_RESPONSES,
    "tags": ["read"],
}


def _tenant(request: Request[Any, Any, Any]) -> Tenant:
    """The memory the route names, checked against the request's token here, once routed.

    The guard in front checks the path as it arrives; the router reads it normalized
    (`//v1/tenants/x` and `/v1//tenants/x` reach tenant x), so the token is checked again
    against the tenant the route resolved to.
    """
    tenants: Tenants = request.app.state.tenants
    found = tenants.get(request.path_params.get("tenant", ""))
    token = bearer_token(request.scope["headers"])
    if found is None or not found.accepts(token):
        raise NotAuthorizedException("the bearer token does not open this memory")
    needed = request.route_handler.opt.get("scope", READ)
    scope = found.scope_of(token)
    if not allows(scope, needed):
        raise PermissionDeniedException(
            f"this token's scope is {scope}; this operation needs {needed} "
            "([server] token: admin, write_token: write, read_token: read)"
        )
    _one_ascii_key(request.scope["headers"])
    return found


def _one_ascii_key(headers: Iterable[tuple[bytes, bytes]]) -> None:
    """At most one Idempotency-Key, in ASCII: the router would take the first of several,
    and shows other bytes as Latin-1 (the key is refused either way: show it as sent)."""
    keys = [value for name, value in headers if name.lower() == b"idempotency-key"]
    if len(keys) > 1:
        shown = [k.decode("utf-8", "replace") for k in keys]
        raise ValidationError("Idempotency-Key", shown, "is given more than once: give one")
    if keys and not keys[0].isascii():
        raise ValidationError(
            "Idempotency-Key",
            keys[0].decode("utf-8", "replace"),
            "must be 1 to 255 visible ASCII characters (no spaces)",
        )


class MemoryApi(Controller):
    """Writes, queries, time travel and audit of one memory."""

    path = ""
    dependencies = {"tenant_memory": Provide(_tenant, sync_to_thread=False)}

    @post("/facts", dto=StrictBody[FactsIn], operation_id="appendFacts", **_WRITE)
    def append_facts(
        self,
        data: JSONBody[FactsIn],
        tenant_memory: TenantMemory,
        idempotency_key: IdempotencyKey = None,
    ) -> FactsOut:
        """Append facts: the whole batch is one atomic append; one result per fact."""
        with tenant_memory.memory() as memory:
            return calls.remember(memory, data, key=idempotency_key)

    @post("/messages", dto=StrictBody[MessageIn], operation_id="recordMessage", **_WRITE)
    def record_message(
        self,
        data: JSONBody[MessageIn],
        tenant_memory: TenantMemory,
        idempotency_key: IdempotencyKey = None,
    ) -> MessageRef:
        """Record one message of a conversation, verbatim."""
        with tenant_memory.memory() as memory:
            return calls.record_message(memory, data, key=idempotency_key)

    @post(
        "/episodes/{episode:str}/messages",
        dto=StrictBody[MessagesIn],
        operation_id="addMessages",
        **_WRITE,
    )
    def add_messages(
        self,
        episode: FromPath[str],
        data: JSONBody[MessagesIn],
        tenant_memory: TenantMemory,
        idempotency_key: IdempotencyKey = None,
    ) -> MessagesAdded:
        """Append a conversation's messages in one atomic write; the extractor reads them in
        the background (`wait`: before answering; `/stats` counts those still waiting)."""
        with tenant_memory.memory() as memory:
            return calls.add_messages(memory, episode, data, key=idempotency_key)

    @post("/aliases", dto=StrictBody[AliasIn], operation_id="addAlias", **_WRITE)
    def add_alias(
        self,
        data: JSONBody[AliasIn],
        tenant_memory: TenantMemory,
        idempotency_key: IdempotencyKey = None,
    ) -> AliasRef:
        """Claim another name for an entity; the first claim of a name wins."""
        with tenant_memory.memory() as memory:
            return calls.add_alias(memory, data, key=idempotency_key)

    @post("/retractions", dto=StrictBody[RetractIn], operation_id="retractFact", **_WRITE)
    def retract(
        self,
        data: JSONBody[RetractIn],
        tenant_memory: TenantMemory,
        idempotency_key: IdempotencyKey = None,
    ) -> RetractRef:
        """End a fact version at valid_until, or withdraw it as never true."""
        with tenant_memory.memory() as memory:
            return calls.retract(memory, data, key=idempotency_key)

    @post("/forget", dto=StrictBody[ForgetIn], operation_id="forget", **_ADMIN)
    def forget(self, data: JSONBody[ForgetIn], tenant_memory: TenantMemory) -> ForgetReport:
        """Erase an entity or a conversation from every view and file; the chain still
        verifies and the erasure is an event (docs/explanation/erasure.md)."""
        with tenant_memory.memory() as memory:
            return erasure.forget(memory, data)

    @post("/decay", operation_id="recordFades", **_WRITE)
    def record_fades(self, tenant_memory: TenantMemory) -> FadePass:
        """One decay pass: record the facts whose decayed confidence went under the recall
        threshold since the previous pass and those lifted back (one event; none when no
        fact crossed). `/history` and `/diff` then show the fades."""
        with tenant_memory.memory() as memory:
            return memory.record_fades()

    @post(
        "/recall",
        dto=StrictBody[RecallIn],
        operation_id="recall",
        return_dto=None,
        status_code=200,
        sync_to_thread=True,
        responses=PROBLEM_RESPONSES,
        tags=["read"],
    )
    def recall(self, data: JSONBody[RecallIn], tenant_memory: TenantMemory) -> Recall:
        """The facts and messages that best answer a question, now or as of a past state
        (`trace`: each stage's best candidates, counts and milliseconds)."""
        with tenant_memory.memory() as memory:
            _within_log(memory, data.position)
            return calls.recall(memory, data)

    @get("/facts", operation_id="factsAbout", **_READ)
    def facts_about(
        self,
        request: Query,
        tenant_memory: TenantMemory,
        *,
        entity: FromQuery[str],
        entity_type: FromQuery[EntityType | None] = None,
        valid_at: ValidAt = None,
        known_at: KnownAt = None,
        position: Position = None,
        include_faded: Annotated[
            bool,
            QueryParameter(description="Also facts whose confidence decayed under 0.1 (faded)."),
        ] = False,
    ) -> FactsFound:
        """Believed facts with the entity as subject or object (faded ones too with
        include_faded)."""
        given = _given(request, locals())
        faded = given.pop("include_faded")
        asked = convert(FactsAboutIn, given)
        with tenant_memory.memory() as memory:
            _within_log(memory, asked.position)
            return calls.facts_about(memory, asked, include_faded=faded)

    @get("/traverse", operation_id="traverse", **_READ)
    def traverse(
        self,
        request: Query,
        tenant_memory: TenantMemory,
        *,
        start: FromQuery[str],
        max_hops: FromQuery[int] = 2,
        edge_types: FromQuery[list[str] | None] = None,
        valid_at: ValidAt = None,
        known_at: KnownAt = None,
        position: Position = None,
        include_faded: Annotated[
            bool,
            QueryParameter(description="Also facts whose confidence decayed under 0.1 (faded)."),
        ] = False,
    ) -> Subgraph:
        """Entities within max_hops of start, and the believed edges between them (faded
        ones too with include_faded)."""
        given = _given(request, locals())
        faded = given.pop("include_faded")
        asked = convert(TraverseIn, given)
        with tenant_memory.memory() as memory:
            _within_log(memory, asked.position)
            return calls.traverse(memory, asked, include_faded=faded)

    @get("/history", operation_id="history", **_READ)
    def history(
        self,
        request: Query,
        tenant_memory: TenantMemory,
        *,
        fact: FromQuery[UUID | None] = None,
        entity: FromQuery[str | None] = None,
        entity_type: FromQuery[EntityType | None] = None,
        slot: FromQuery[UUID | None] = None,
    ) -> HistoryOut:
        """Every event of a fact's slot, a slot or an entity (exactly one), oldest first."""
        asked = convert(HistoryIn, _given(request, locals()))
        with tenant_memory.memory() as memory:
            return calls.history(memory, asked)

    @get("/diff", operation_id="diff", **_READ)
    def diff(
        self, request: Query, tenant_memory: TenantMemory, since: Moment, until: Moment
    ) -> Diff:
        """Facts asserted, superseded, retracted, faded and restored after since and up to
        until."""
        asked = convert(DiffIn, _given(request, locals()))
        with tenant_memory.memory() as memory:
            return calls.diff(memory, asked)

    @get("/verify", operation_id="verify", **_READ)
    def verify(self, tenant_memory: TenantMemory) -> VerifyReport:
        """Recompute the hash chain: ok, events checked, the first bad position if any."""
        with tenant_memory.memory() as memory:
            return memory.verify()

    @get("/stats", operation_id="stats", **_READ)
    def stats(self, tenant_memory: TenantMemory) -> MemoryStats:
        """Counts of events, entities and facts; sizes on disk; projection lag."""
        with tenant_memory.memory() as memory:
            return memory.stats()


def _within_log(memory: Memory, position: int | None) -> None:
    """A position past the log's end names no state this memory has had (a position read
    from another memory, or one ahead of it): not found, as an id naming no fact is. The
    head instead would answer a different state than the one asked for, and the same
    request would answer differently once the log grows."""
    if position is not None and position > (last := memory.log.last_position()):
        raise NotFoundError(f"position {position}: this log ends at position {last}")


def _given(
    request: Query, arguments: dict[str, Any], renamed: dict[str, str] | None = None
) -> dict[str, Any]:
    """The query parameters given, by name; a parameter the operation does not take is
    refused, as a body's unknown field is, and a single-valued one given twice too.
    `renamed` maps an argument to its parameter's name where the two differ."""
    names = renamed or {}
    taken = {names.get(k, k) for k in arguments if k not in _NOT_PARAMETERS}
    unknown = sorted(set(request.query_params) - taken)
    if unknown:
        rule = f"is not a parameter of this operation (it takes {', '.join(sorted(taken))})"
        raise ValidationError(unknown[0], request.query_params.getall(unknown[0]), rule)
    given = {k: v for k, v in arguments.items() if k not in _NOT_PARAMETERS and v is not None}
    for name, value in given.items():
        sent = request.query_params.getall(names.get(name, name), [])
        if not isinstance(value, list) and len(sent) > 1:
            raise ValidationError(names.get(name, name), sent, "is given more than once")
    return given


_NOT_PARAMETERS: Final = frozenset({"self", "request", "tenant_memory"})
