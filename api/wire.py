"""What agents send and get back over HTTP and MCP: one set of msgspec types for both servers.

Requests mirror the commands and query methods of `Memory` (a test keeps the write
requests' fields equal to the commands'); responses are the structs `Memory` returns,
wrapped in an object where a list would otherwise be the whole answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal, TypeVar
from uuid import UUID

import msgspec

from apexmem.domain.commands import TOO_DEEP
from apexmem.domain.names import MAX_INPUT_NAME_BYTES
from apexmem.domain.types import EntityType
from apexmem.events.base import MAX_REF_BYTES, Probability
from apexmem.events.errors import ValidationError
from apexmem.events.link import LinkType
from apexmem.events.timeutil import UtcDateTime
from apexmem.readmodels.communities import CommunityRow
from apexmem.readmodels.episodes import EpisodeRow
from apexmem.readmodels.rows import EntityRow, FactRow
from apexmem.replay.audit import HistoryEntry
from apexmem.service.results import FactRef, MessageRef

__all__ = [
    "MAX_BATCH",
    "AddMemoryIn",
    "AliasIn",
    "AsOfRecallIn",
    "ChatMessageIn",
    "CommunitiesIn",
    "CommunitiesOut",
    "DiffIn",
    "EntitiesIn",
    "EntitiesOut",
    "EpisodeIn",
    "EpisodesIn",
    "EpisodesOut",
    "FactGraphIn",
    "FactIn",
    "FactsAboutIn",
    "FactsFound",
    "FactsIn",
    "FactsOut",
    "HistoryIn",
    "HistoryOut",
    "LinkIn",
    "MergeIn",
    "MessageIn",
    "MessagesAdded",
    "MessagesIn",
    "Nothing",
    "RecallIn",
    "RetractIn",
    "TraverseIn",
    "convert",
    "decode",
]

MAX_BATCH: Final = 1_000
"""Facts in one append request (one atomic append)."""

_Name = Annotated[str, msgspec.Meta(max_length=MAX_INPUT_NAME_BYTES)]
_Ref = Annotated[str, msgspec.Meta(max_length=MAX_REF_BYTES)]
_Query = Annotated[str, msgspec.Meta(max_length=65_536)]
_Limit = Annotated[int, msgspec.Meta(ge=1, le=100)]
_Hops = Annotated[int, msgspec.Meta(ge=0, le=6)]


class _In(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class FactIn(_In, frozen=True, kw_only=True):
    """A fact to remember: subject -relation-> object (an entity), or -> value, or a note."""

    subject: _Name
    relation: str
    subject_type: str = "concept"
    object: _Name | None = None
    object_type: str = "concept"
    value: str | None = None
    edge_type: str = "semantic"
    fact: str | None = None
    confidence: Probability = 1.0
    valid_from: UtcDateTime | None = None
    valid_until: UtcDateTime | None = None
    observed_at: UtcDateTime | None = None
    ref: _Ref | None = None
    actor: _Ref | None = None
    episode: _Ref | None = None


class FactsIn(_In, frozen=True, kw_only=True):
    """Facts appended together: all of them land in one atomic append, or none does."""

    facts: Annotated[list[FactIn], msgspec.Meta(min_length=1, max_length=MAX_BATCH)]


class FactsOut(msgspec.Struct, frozen=True, kw_only=True):
    """One result per fact asserted, in order."""

    results: list[FactRef]


class FactsFound(msgspec.Struct, frozen=True, kw_only=True):
    """The fact versions a query found."""

    facts: list[FactRow]


class MessageIn(_In, frozen=True, kw_only=True):
    """One message of a conversation (`episode`), stored verbatim."""

    episode: _Ref
    """The conversation the message belongs to."""
    speaker: _Name
    text: str
    at: UtcDateTime | None = None
    ref: _Ref | None = None
    actor: _Ref | None = None


class ChatMessageIn(_In, frozen=True, kw_only=True):
    """One message of a conversation given with others (`add_memory`, `/episodes/.../messages`)."""

    speaker: _Name = "user"
    """Who said it: a name, or a role (`user`, `assistant`)."""
    text: str
    at: UtcDateTime | None = None
    """When it was said (default: the call's reference_time, else now)."""
    ref: _Ref | None = None


class MessagesIn(_In, frozen=True, kw_only=True):
    """A conversation's messages, appended at once; extraction follows in the background."""

    messages: Annotated[list[ChatMessageIn], msgspec.Meta(min_length=1, max_length=10_000)]
    reference_time: UtcDateTime | None = None
    """When the messages without `at` were said (default: now)."""
    wait: bool = False
    """Extract every waiting message before answering (the answer counts none pending)."""


class AddMemoryIn(_In, frozen=True, kw_only=True):
    """Conversation text for the memory: raw `text` from `speaker`, or a list of `messages`."""

    episode: _Ref
    """The conversation (episode) the messages belong to."""
    text: str | None = None
    speaker: _Name = "user"
    """Who said `text`."""
    messages: list[ChatMessageIn] | None = None
    reference_time: UtcDateTime | None = None
    """When the text (or the messages without `at`) was said (default: now)."""
    wait: bool = False
    """Extract every waiting message before answering."""


class MessagesAdded(msgspec.Struct, frozen=True, kw_only=True):
    """Messages appended, and how many messages of the memory wait for extraction."""

    episode: str
    messages: list[MessageRef]
    pending: int
    """Messages no extractor has read yet (0 after `wait`)."""
    facts: int = 0
    """Facts extracted while the call waited (`wait`)."""


class AliasIn(_In, frozen=True, kw_only=True):
    """Another name for an entity of the same type; the first claim of a name wins."""

    entity: _Name
    alias: _Name
    entity_type: str = "concept"
    actor: _Ref | None = None
    episode: _Ref | None = None


class RetractIn(_In, frozen=True, kw_only=True):
    """End a fact version at `valid_until`, or withdraw it as never true when omitted."""

    fact_id: UUID
    valid_until: UtcDateTime | None = None
    reason: _Ref = "retracted"
    actor: _Ref | None = None
    episode: _Ref | None = None


class RecallIn(_In, frozen=True, kw_only=True):
    """A question: the facts and messages that best answer it, best first, with why.

    Without `valid_at`, facts current then (valid now, or at `known_at`); a time the
    question names ("in 2019", "last summer", "before she moved") or `window` [start, end]
    recalls the facts valid at some time in it, relative times counted from
    `reference_time` (else now). `position`: the log as it stood at that position, instead
    of `known_at`.
    """

    query: _Query
    limit: _Limit | None = None
    max_hops: _Hops | None = None
    edge_types: list[str] | None = None
    mode: Literal["bfs", "activation"] | None = None
    valid_at: UtcDateTime | None = None
    known_at: UtcDateTime | None = None
    relations: list[str] | None = None
    min_score: float | None = None
    window: tuple[UtcDateTime, UtcDateTime] | None = None
    reference_time: UtcDateTime | None = None
    position: int | None = None
    trace: bool = False
    """Return `trace`: each stage's best candidates, counts and milliseconds."""


class AsOfRecallIn(_In, frozen=True, kw_only=True):
    """A recall inside a past state: true in the world at `valid_at`, as the store had been
    told by `known_at` or by log `position` (any alone, or together)."""

    query: _Query
    valid_at: UtcDateTime | None = None
    known_at: UtcDateTime | None = None
    position: int | None = None
    limit: _Limit | None = None
    max_hops: _Hops | None = None
    edge_types: list[str] | None = None
    mode: Literal["bfs", "activation"] | None = None
    relations: list[str] | None = None
    min_score: float | None = None
    window: tuple[UtcDateTime, UtcDateTime] | None = None
    reference_time: UtcDateTime | None = None
    trace: bool = False
    """Return `trace`: each stage's best candidates, counts and milliseconds."""


class FactsAboutIn(_In, frozen=True, kw_only=True):
    """Believed facts with the entity as subject or object, on both time axes (without
    `valid_at`: those current then; `position`: the log as it stood there)."""

    entity: _Name
    entity_type: str | None = None
    valid_at: UtcDateTime | None = None
    known_at: UtcDateTime | None = None
    relation: str | None = None
    position: int | None = None


class TraverseIn(_In, frozen=True, kw_only=True):
    """Entities within `max_hops` of `start` over believed edges, and the edges between them."""

    start: _Name
    max_hops: _Hops = 2
    edge_types: list[str] = []
    valid_at: UtcDateTime | None = None
    known_at: UtcDateTime | None = None
    position: int | None = None


class HistoryIn(_In, frozen=True, kw_only=True):
    """Every event of a fact's slot, a slot, or an entity (exactly one of the three)."""

    fact: UUID | None = None
    entity: _Name | None = None
    entity_type: str | None = None
    slot: UUID | None = None


class HistoryOut(msgspec.Struct, frozen=True, kw_only=True):
    """Events oldest first, with position, time, provenance and chain hash."""

    events: list[HistoryEntry]


class DiffIn(_In, frozen=True, kw_only=True):
    """Facts asserted, superseded and retracted after `since` and up to `until`."""

    since: UtcDateTime
    until: UtcDateTime


class Nothing(_In, frozen=True, kw_only=True):
    """An operation that takes no argument."""


class LinkIn(_In, frozen=True, kw_only=True):
    """Link two fact versions: `source` supersedes, is caused by, is part of, relates to or
    depends on `target` (fact ids or the short ids the CLI prints)."""

    source: _Ref
    target: _Ref
    link_type: LinkType
    strength: Annotated[float, msgspec.Meta(gt=0.0, le=1.0)] = 1.0
    actor: _Ref | None = None


class FactGraphIn(_In, frozen=True, kw_only=True):
    """The links from and to a fact, `depth` hops out, and the facts they reach."""

    fact: _Ref
    depth: Annotated[int, msgspec.Meta(ge=1, le=3)] = 1
    known_at: UtcDateTime | None = None


class EntitiesIn(_In, frozen=True, kw_only=True):
    """Entities named `query` (any case, aliases too), else those whose name starts with it;
    without a query, every entity in name order."""

    query: _Name | None = None
    entity_type: EntityType | None = None
    known_at: UtcDateTime | None = None
    limit: _Limit = 20


class EntitiesOut(msgspec.Struct, frozen=True, kw_only=True):
    """Entities a name search found."""

    entities: list[EntityRow]


class EpisodesIn(_In, frozen=True, kw_only=True):
    """The episodes (conversations) that mentioned an entity, first mentioned first."""

    entity: _Name
    entity_type: EntityType | None = None
    known_at: UtcDateTime | None = None
    position: int | None = None


class EpisodesOut(msgspec.Struct, frozen=True, kw_only=True):
    """Episodes, first mentioned first."""

    episodes: list[EpisodeRow]


class EpisodeIn(_In, frozen=True, kw_only=True):
    """A conversation's events (its messages), oldest first; those recorded by `known_at`."""

    conversation: _Ref
    known_at: UtcDateTime | None = None


class CommunitiesIn(_In, frozen=True, kw_only=True):
    """Live communities, largest first, with their best-connected members."""

    limit: _Limit = 50
    top: Annotated[int, msgspec.Meta(ge=1, le=50)] = 5


class CommunitiesOut(msgspec.Struct, frozen=True, kw_only=True):
    """Communities, largest first."""

    communities: list[CommunityRow]


class MergeIn(_In, frozen=True, kw_only=True):
    """Merge entity `source` forward into `target` of the same type; its names keep
    resolving to the target."""

    source: _Name
    target: _Name
    entity_type: EntityType = "concept"
    reason: _Ref | None = None
    actor: _Ref | None = None
    episode: _Ref | None = None


T = TypeVar("T")


def decode(kind: type[T], raw: bytes | str) -> T:
    """JSON into `kind`, strictly; a bad value raises ValidationError naming field and rule."""
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.ValidationError as e:
        raise _translated(e, raw) from e
    except msgspec.DecodeError as e:
        raise ValidationError("body", _clip(raw), f"is not valid JSON ({e})") from e
    except RecursionError as e:  # msgspec's depth limit is the interpreter's recursion limit
        raise ValidationError("body", _clip(raw), TOO_DEEP) from e


def convert(kind: type[T], fields: Mapping[str, Any]) -> T:
    """Python values (query parameters, tool arguments) into `kind`, as `decode` would."""
    try:
        return msgspec.convert(dict(fields), type=kind)
    except msgspec.ValidationError as e:
        raise _translated(e, fields) from e
    except RecursionError as e:
        raise ValidationError("arguments", None, "nest arrays and objects too deeply") from e


def _translated(
    error: msgspec.ValidationError, raw: bytes | str | Mapping[str, Any]
) -> ValidationError:
    message = str(error)
    rule, _, where = message.partition(" - at `$")
    path = where.rstrip("`").lstrip(".")
    if rule.startswith("Object missing required field"):
        missing = rule.split("`")[1]
        return ValidationError(f"{path}.{missing}" if path else missing, None, "is required")
    if rule.startswith("Object contains unknown field"):
        unknown = rule.split("`")[1]
        return ValidationError(
            f"{path}.{unknown}" if path else unknown, None, "is not a known field"
        )
    value = _at(_document(raw), path)
    if "timezone" in rule:
        rule = "is a naive datetime; give a timezone, e.g. 2024-01-01T00:00:00Z"
    else:
        rule = f"is invalid: {rule[0].lower()}{rule[1:]}" if rule else "is invalid"
    return ValidationError(path or "body", value, rule)


def _document(raw: bytes | str | Mapping[str, Any]) -> object:
    """The request as plain values, to find the bad one in (None if even that fails: a
    number beyond a float's range fails untyped decoding too)."""
    if isinstance(raw, Mapping):
        return raw
    try:
        return msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None


def _at(document: object, path: str) -> object:
    """The value at a msgspec error path such as `facts[2].confidence`, or None."""
    node = document
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("[") and isinstance(node, list):
            index = int(part[1:-1])
            node = node[index] if index < len(node) else None
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
    return node


def _clip(raw: bytes | str) -> str:
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    return text if len(text) <= 60 else text[:57] + "..."
