"""Each request of the HTTP API and each MCP tool as one `Memory` call: the servers' only logic.

Both servers decode a request into its `apexmem.wire` type, then call one function here
while holding the memory's lock (a `Memory` serves one call at a time).
"""

from __future__ import annotations

import re
from typing import Final, TypeVar

import blake3
import msgspec

from apexmem.domain.commands import AddAlias, Command, RecordMessage, RetractFact, build
from apexmem.events.errors import ValidationError
from apexmem.memory import Memory
from apexmem.readmodels.rows import Subgraph
from apexmem.replay.diff import Diff
from apexmem.service.recalled import Recall
from apexmem.service.results import AliasRef, MessageRef, RetractRef
from apexmem.wire import (
    AddMemoryIn,
    AliasIn,
    AsOfRecallIn,
    ChatMessageIn,
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
)

__all__ = [
    "add_alias",
    "add_memory",
    "add_messages",
    "diff",
    "facts_about",
    "history",
    "idempotency_key",
    "recall",
    "record_message",
    "remember",
    "retract",
    "traverse",
]

R = TypeVar("R")

_KEY: Final = re.compile(r"[\x21-\x7e]{1,255}")
"""An Idempotency-Key: 1 to 255 visible ASCII characters (a UUID, say)."""


def idempotency_key(operation: str, key: str | None, request: msgspec.Struct) -> str | None:
    """The log's idempotency key for a client's key: bound to the operation and the request.

    A retry (same key, same request) finds the first append's results in the log; the same
    key with a different request is a different request, so it can never be answered
    with the results of another write.
    """
    if key is None:
        return None
    if not _KEY.fullmatch(key):
        raise ValidationError(
            "Idempotency-Key", key, "must be 1 to 255 visible ASCII characters (no spaces)"
        )
    digest = blake3.blake3(msgspec.json.encode(request, order="deterministic")).hexdigest()
    return f"{operation}:{key}:{digest[:32]}"


def remember(memory: Memory, request: FactsIn, *, key: str | None = None) -> FactsOut:
    """Assert every fact of the request in one atomic append."""
    facts = [msgspec.structs.asdict(f) for f in request.facts]
    scoped = idempotency_key("facts", key, request)
    return FactsOut(results=memory.assert_facts(facts, idempotency_key=scoped))


def record_message(memory: Memory, request: MessageIn, *, key: str | None = None) -> MessageRef:
    """Store one message verbatim."""
    return _one(memory, "messages", RecordMessage, request, key=key, answer=MessageRef)


def add_messages(
    memory: Memory, episode: str, request: MessagesIn, *, key: str | None = None
) -> MessagesAdded:
    """Append a conversation's messages at once; extraction follows in the background
    (or before the answer, with `wait`)."""
    messages = [
        {
            "speaker": m.speaker,
            "text": m.text,
            "at": m.at or request.reference_time,
            "ref": m.ref,
        }
        for m in request.messages
    ]
    added = memory.add_messages(
        episode=episode, messages=messages, extract=not request.wait, idempotency_key=key
    )
    if not request.wait:
        return MessagesAdded(episode=episode, messages=added.messages, pending=added.pending)
    report = memory.extract_pending()
    return MessagesAdded(
        episode=episode, messages=added.messages, pending=report.pending, facts=report.facts
    )


def add_memory(memory: Memory, request: AddMemoryIn) -> MessagesAdded:
    """MCP `add_memory`: raw text from a speaker, or a list of messages, as `add_messages`."""
    if (request.text is None) == (request.messages is None):
        raise ValidationError("text", request.text, "give exactly one of text and messages")
    given = request.messages or [ChatMessageIn(speaker=request.speaker, text=request.text or "")]
    asked = MessagesIn(messages=given, reference_time=request.reference_time, wait=request.wait)
    return add_messages(memory, request.episode, asked)


def add_alias(memory: Memory, request: AliasIn, *, key: str | None = None) -> AliasRef:
    """Claim another name for an entity."""
    return _one(memory, "aliases", AddAlias, request, key=key, answer=AliasRef)


def retract(memory: Memory, request: RetractIn, *, key: str | None = None) -> RetractRef:
    """End or withdraw one fact version."""
    return _one(memory, "retractions", RetractFact, request, key=key, answer=RetractRef)


def _one(
    memory: Memory,
    operation: str,
    kind: type[Command],
    request: msgspec.Struct,
    *,
    key: str | None,
    answer: type[R],
) -> R:
    """Run the request as one command of `kind`, idempotent under `key`; its result."""
    command = build(kind, msgspec.structs.asdict(request))
    [result] = memory.execute([command], idempotency_key=idempotency_key(operation, key, request))
    assert isinstance(result, answer)
    return result


def recall(memory: Memory, request: RecallIn | AsOfRecallIn) -> Recall:
    """The hits that best answer the query, now or inside a past state (with `trace`: how
    each stage ranked them)."""
    return memory.recall(
        request.query,
        limit=request.limit,
        max_hops=request.max_hops,
        edge_types=request.edge_types,
        mode=request.mode,
        valid_at=request.valid_at,
        known_at=request.known_at,
        relations=request.relations,
        min_score=request.min_score,
        window=request.window,
        reference_time=request.reference_time,
        position=request.position,
        trace=request.trace,
    )


def facts_about(
    memory: Memory, request: FactsAboutIn, *, include_faded: bool = False
) -> FactsFound:
    """Believed facts about an entity, valid at `valid_at`, as known at `known_at` (faded
    ones too with `include_faded`)."""
    view = memory.as_of(known_at=request.known_at, position=request.position)
    found = view.facts_about(
        request.entity,
        valid_at=request.valid_at,
        entity_type=request.entity_type,
        relation=request.relation,
        include_faded=include_faded,
    )
    return FactsFound(facts=found)


def traverse(memory: Memory, request: TraverseIn, *, include_faded: bool = False) -> Subgraph:
    """The neighbourhood of an entity over believed edges (faded ones too with
    `include_faded`)."""
    view = memory.as_of(known_at=request.known_at, position=request.position)
    return view.traverse(
        request.start,
        max_hops=request.max_hops,
        edge_types=request.edge_types,
        valid_at=request.valid_at,
        include_faded=include_faded,
    )


def history(memory: Memory, request: HistoryIn) -> HistoryOut:
    """Every event of a fact's slot, a slot or an entity, oldest first."""
    events = memory.history(
        fact=request.fact,
        entity=request.entity,
        entity_type=request.entity_type,
        slot=request.slot,
    )
    return HistoryOut(events=events)


def diff(memory: Memory, request: DiffIn) -> Diff:
    """What changed between two transaction times."""
    return memory.diff(request.since, request.until)
