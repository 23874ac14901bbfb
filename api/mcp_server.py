"""The MCP server (`apexmem mcp`): tools over one memory, on stdio or streamable HTTP.

Each tool's input schema is the JSON schema of an `apexmem.wire` type (the same types the
HTTP API takes); each result is text an LLM can read plus the structured value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any, Final

import anyio
import mcp_types as types
import msgspec
from mcp.server import Server, ServerRequestContext

from apexmem import calls, erasure, mcp_texts, operations
from apexmem.erasure import ForgetIn
from apexmem.events.errors import ApexmemError, ValidationError
from apexmem.memory import Memory
from apexmem.readmodels.rows import FactRow, Subgraph
from apexmem.replay.diff import Diff
from apexmem.replay.verify import VerifyReport
from apexmem.server.auth import BearerGuard, bearer_token
from apexmem.server.tenants import Scope, Tenant, Tenants, allows
from apexmem.service.fact_links import FactGraph, FactLink
from apexmem.service.fading import FadePass
from apexmem.service.forgetting import ForgetReport
from apexmem.service.recalled import Recall, format_context
from apexmem.service.results import AliasRef, MemoryStats, MergeRef, MessageRef, RetractRef
from apexmem.service.status import Status
from apexmem.wire import (
    AddMemoryIn,
    AliasIn,
    AsOfRecallIn,
    CommunitiesIn,
    CommunitiesOut,
    DiffIn,
    EntitiesIn,
    EntitiesOut,
    EpisodeIn,
    EpisodesIn,
    EpisodesOut,
    FactGraphIn,
    FactIn,
    FactsAboutIn,
    FactsFound,
    FactsIn,
    FactsOut,
    HistoryIn,
    HistoryOut,
    LinkIn,
    MergeIn,
    MessageIn,
    MessagesAdded,
    Nothing,
    RecallIn,
    RetractIn,
    TraverseIn,
    convert,
)
from apexmem.wire_fields import described

__all__ = ["TOOLS", "Tool", "build_server", "http_app", "run_stdio", "tool_schema"]

_INSTRUCTIONS: Final = """apexmem is a long-term memory. Call `remember` for each durable fact
you learn (subject -relation-> object), `add_memory` for conversation (facts are extracted
from it), `record_message` for single turns worth keeping, and `recall` before answering
questions about the past. Facts are never overwritten: a new employer supersedes the old
one, and `history` shows every version.
Times are ISO 8601 with a zone, e.g. 2025-03-01T00:00:00Z."""


@dataclass(frozen=True, kw_only=True)
class Tool:
    """One MCP tool: its wire input type, the call it makes and how its result reads."""

    name: str
    description: str
    input: type[msgspec.Struct]
    output: type[msgspec.Struct]
    run: Callable[[Memory, Any], msgspec.Struct]
    text: Callable[[Any], str]
    read_only: bool = True
    destructive: bool = False


def _remember(memory: Memory, fact: FactIn) -> FactsOut:
    try:
        return calls.remember(memory, FactsIn(facts=[fact]))
    except ValidationError as e:  # the caller sent one fact, not a list: name its own field
        field = e.field.removeprefix("facts[0]").removeprefix(".") or "fact"
        raise ValidationError(field, e.value, e.rule) from None


def _fact_line(row: FactRow) -> str:
    until = f" until {row.valid_until:%Y-%m-%d}" if row.valid_until else ""
    return (
        f"- {row.fact} (valid from {row.valid_from:%Y-%m-%d}{until}, confidence "
        f"{row.confidence:.2f}, {row.edge_type}, fact {row.fact_id})"
    )


def _remembered(out: FactsOut) -> str:
    [ref] = out.results
    replaced = f", superseding fact {ref.supersedes}" if ref.supersedes else ""
    return f"Remembered: fact {ref.fact_id} {ref.outcome}{replaced} (log position {ref.position})."


def _recorded(ref: MessageRef) -> str:
    return f"Recorded message {ref.message_id} (log position {ref.position})."


def _added(out: MessagesAdded) -> str:
    waiting = f"; {out.pending} waiting for extraction" if out.pending else ""
    learned = f"; {out.facts} facts extracted" if out.facts else ""
    return f"added {len(out.messages)} messages to {out.episode}{learned}{waiting}"


def _recalled(found: Recall) -> str:
    if not found.hits:
        return "Nothing in memory answers that."
    cut = "\n(cut short by the time budget)" if found.cut_short else ""
    return format_context(found, budget_chars=4_000) + cut


def _facts(found: FactsFound) -> str:
    if not found.facts:
        return "No believed facts about that entity."
    return "\n".join(_fact_line(row) for row in found.facts)


def _subgraph(graph: Subgraph) -> str:
    if not graph.entities:
        return "No entity answers to that name."
    reached = ", ".join(f"{e.name} ({e.entity_type}, {e.hops} hops)" for e in graph.entities)
    edges = "\n".join(_fact_line(row) for row in graph.facts) or "(no edges)"
    return f"Entities: {reached}\nEdges:\n{edges}"


TOOLS: Final = (
    Tool(
        name="remember",
        description="Remember one fact: subject -relation-> object (an entity), or a literal "
        "value, or a note about the subject. A new object on a single-valued relation "
        "(works_at, lives_in) supersedes the old one; the same fact again reinforces it.",
        input=FactIn,
        output=FactsOut,
        run=_remember,
        text=_remembered,
        read_only=False,
    ),
    Tool(
        name="record_message",
        description="Store one conversation message verbatim (speaker, text, episode).",
        input=MessageIn,
        output=MessageRef,
        run=calls.record_message,
        text=_recorded,
        read_only=False,
    ),
    Tool(
        name="add_memory",
        description="Add conversation to the memory: raw `text` said by `speaker`, or a list "
        "of `messages` ({speaker, text, at}), in an episode, at `reference_time`. They are "
        "stored verbatim at once; facts are extracted from them in the background (`wait` "
        "to extract before answering). Relative times (last week) count from when said.",
        input=AddMemoryIn,
        output=MessagesAdded,
        run=calls.add_memory,
        text=_added,
        read_only=False,
    ),
    Tool(
        name="recall",
        description="The remembered facts and messages that best answer a question, best "
        "first (full text, vectors and graph neighbours, fused), each line dated (when a fact "
        "held, when a message was said). Facts current now unless the question names a time "
        '("in 2019", "last summer", "before she moved"; relative ones counted from '
        "reference_time) or window [start, end] is given: then those valid at some time in it.",
        input=RecallIn,
        output=Recall,
        run=calls.recall,
        text=_recalled,
    ),
    Tool(
        name="recall_as_of",
        description="Recall inside a past state: what was true in the world at valid_at "
        '("where did Alice work in 2019"), and/or what the memory had been told by '
        "known_at or by log position; each is optional (valid_at alone is enough).",
        input=AsOfRecallIn,
        output=Recall,
        run=calls.recall,
        text=_recalled,
    ),
    Tool(
        name="facts_about",
        description="Every believed fact with the entity as subject or object: current ones "
        "(open-ended or ending later), or those valid at valid_at, as known at known_at or "
        "log position.",
        input=FactsAboutIn,
        output=FactsFound,
        run=calls.facts_about,
        text=_facts,
    ),
    Tool(
        name="traverse",
        description="Entities within max_hops of an entity and the believed edges between them.",
        input=TraverseIn,
        output=Subgraph,
        run=calls.traverse,
        text=_subgraph,
    ),
    Tool(
        name="forget",
        description="Erase an entity (by name, with entity_type when ambiguous) or a "
        "conversation (episode) from every view and file of the memory, for an erasure "
        "request; reason is required. The chain still verifies; the erasure is an event.",
        input=ForgetIn,
        output=ForgetReport,
        run=erasure.forget,
        text=erasure.forgot,
        read_only=False,
        destructive=True,
    ),
    Tool(
        name="history",
        description="Every event behind a fact (by fact id), a slot, or an entity, oldest first, "
        "with log position, time, actor, episode and what changed (asserted, observed again, "
        "closed, retracted, faded, linked).",
        input=HistoryIn,
        output=HistoryOut,
        run=calls.history,
        text=mcp_texts.history,
    ),
    Tool(
        name="diff",
        description="What changed between two times the memory was told things: facts "
        "asserted, superseded, retracted, faded and restored, and links told.",
        input=DiffIn,
        output=Diff,
        run=calls.diff,
        text=mcp_texts.diffed,
    ),
    Tool(
        name="retract",
        description="End a fact version at valid_until (it stopped being true), or withdraw it "
        "as never true when valid_until is omitted; the version stays in history.",
        input=RetractIn,
        output=RetractRef,
        run=calls.retract,
        text=mcp_texts.retracted,
        read_only=False,
    ),
    Tool(
        name="add_alias",
        description="Claim another name for an entity of the same type (the first claim of a "
        "name wins).",
        input=AliasIn,
        output=AliasRef,
        run=calls.add_alias,
        text=mcp_texts.aliased,
        read_only=False,
    ),
    Tool(
        name="merge_entities",
        description="Merge entity source forward into target (same type): the source's facts "
        "and names count as the target's from now on.",
        input=MergeIn,
        output=MergeRef,
        run=operations.merge,
        text=mcp_texts.merged,
        read_only=False,
    ),
    Tool(
        name="link_facts",
        description="Link two fact versions (ids from recall or facts_about): source "
        "supersedes, is caused_by, part_of, related_to or depends_on target, with a strength "
        "in (0, 1]. Recall then brings a hit's linked facts.",
        input=LinkIn,
        output=FactLink,
        run=operations.link,
        text=mcp_texts.linked,
        read_only=False,
    ),
    Tool(
        name="fact_graph",
        description="The links from and to a fact, depth (1 to 3) hops out, and the facts "
        "they reach, as known at known_at.",
        input=FactGraphIn,
        output=FactGraph,
        run=operations.fact_graph,
        text=mcp_texts.fact_graph,
    ),
    Tool(
        name="search_entities",
        description="Entities named query (any case, aliases too), else those whose name "
        "starts with it; without a query, every entity in name order.",
        input=EntitiesIn,
        output=EntitiesOut,
        run=operations.entities,
        text=mcp_texts.entities,
    ),
    Tool(
        name="get_episodes",
        description="The episodes (conversations) that mentioned an entity, first mentioned "
        "first, with how many messages each holds.",
        input=EpisodesIn,
        output=EpisodesOut,
        run=operations.episodes,
        text=mcp_texts.episodes,
    ),
    Tool(
        name="get_episode",
        description="The messages of one conversation (episode), oldest first, with speaker, "
        "text and time; those the memory had by known_at when given.",
        input=EpisodeIn,
        output=HistoryOut,
        run=operations.episode,
        text=mcp_texts.history,
    ),
    Tool(
        name="communities",
        description="Communities of related entities found by `apexmem communities`, largest "
        "first, with their summaries and best-connected members.",
        input=CommunitiesIn,
        output=CommunitiesOut,
        run=operations.communities,
        text=mcp_texts.communities,
    ),
    Tool(
        name="record_fades",
        description="One decay pass: record the facts whose decayed confidence went under the "
        "recall threshold since the previous pass, and those lifted back (history and diff "
        "then show them).",
        input=Nothing,
        output=FadePass,
        run=lambda memory, _: memory.record_fades(),
        text=mcp_texts.faded,
        read_only=False,
    ),
    Tool(
        name="get_status",
        description="Counts, each projection's lag behind the log, the settings that shape "
        "recall, and versions; no data.",
        input=Nothing,
        output=Status,
        run=lambda memory, _: memory.status(),
        text=mcp_texts.status,
    ),
    Tool(
        name="stats",
        description="Counts of events, entities and facts; sizes on disk; projection lag.",
        input=Nothing,
        output=MemoryStats,
        run=lambda memory, _: memory.stats(),
        text=mcp_texts.stats,
    ),
    Tool(
        name="verify",
        description="Recompute the log's hash chain: ok with the head to keep, or the first "
        "bad position and why (the memory then refuses writes).",
        input=Nothing,
        output=VerifyReport,
        run=lambda memory, _: memory.verify(),
        text=mcp_texts.verified,
    ),
)
"""The tools, in the order `tools/list` gives them."""

_BY_NAME: Final = {tool.name: tool for tool in TOOLS}


def tool_schema(kind: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON schema of a wire type with the object at its root (as MCP requires), every
    field described (`apexmem.wire_fields`)."""
    schema = described(msgspec.json.schema(kind))
    definitions: dict[str, Any] = dict(schema.get("$defs", {}))
    root: dict[str, Any] = definitions.pop(kind.__name__)
    return {**root, "$defs": definitions} if definitions else root


def _listing() -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name=tool.name,
                description=tool.description,
                input_schema=tool_schema(tool.input),
                output_schema=tool_schema(tool.output),
                annotations=types.ToolAnnotations(
                    read_only_hint=tool.read_only, destructive_hint=tool.destructive
                ),
            )
            for tool in TOOLS
        ]
    )


def _call(tenant: Tenant, tool: Tool, arguments: dict[str, Any]) -> types.CallToolResult:
    try:
        request = convert(tool.input, arguments)
        with tenant.memory() as memory:
            result = tool.run(memory, request)
    except ApexmemError as e:
        return types.CallToolResult(content=[types.TextContent(text=f"error: {e}")], is_error=True)
    return types.CallToolResult(
        content=[types.TextContent(text=tool.text(result))],
        structured_content=msgspec.to_builtins(result),
    )


def _refused(tenant: Tenant, tool: Tool, request: Any) -> str | None:
    """Why the request's token may not call `tool` (over HTTP: read-only tools need a read
    token, others a write token, `forget` the admin's), or None. Over stdio there is no
    token: the local user may call every tool."""
    if request is None:
        return None
    needed: Scope = "admin" if tool.destructive else "read" if tool.read_only else "write"
    scope = tenant.scope_of(bearer_token(request.scope.get("headers", [])))
    if allows(scope, needed):
        return None
    return f"error: this token's scope is {scope}; the tool {tool.name} needs {needed}"


def build_server(tenant: Tenant) -> Server[Any]:
    """The MCP server over one memory (opened on the first tool call, closed by the caller)."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return _listing()

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = _BY_NAME.get(params.name)
        if tool is None:
            known = ", ".join(_BY_NAME)
            text = f"error: no tool named {params.name!r}; the tools are {known}"
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        refused = _refused(tenant, tool, ctx.request)
        if refused is not None:
            return types.CallToolResult(content=[types.TextContent(text=refused)], is_error=True)
        arguments = dict(params.arguments or {})
        return await anyio.to_thread.run_sync(_call, tenant, tool, arguments)

    return Server(
        "apexmem",
        version=version("apexmem"),
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def run_stdio(tenant: Tenant) -> None:
    """Serve MCP over this process's stdin and stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    server = build_server(tenant)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(tenants: Tenants, *, host: str) -> BearerGuard:
    """Streamable HTTP at `/mcp` over the one memory of `tenants`, behind the bearer guard."""
    tenant = tenants.get()
    assert tenant is not None
    server = build_server(tenant)
    app = server.streamable_http_app(streamable_http_path="/mcp", host=host)
    return BearerGuard(app, tenants)
