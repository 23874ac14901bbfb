"""What each request field of the wire types means, and the fixed values some take: one
table the MCP input schemas and the OpenAPI document both read, so a field reads the
same to an agent and to a service."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apexmem.domain.types import EDGE_TYPE_ALIASES, ENTITY_TYPES
from apexmem.events.base import EDGE_TYPES
from apexmem.events.link import LINK_TYPES

__all__ = [
    "BOUNDS",
    "ENUMS",
    "EXCLUSIVE",
    "FACT_ID",
    "FIELDS",
    "NAMED",
    "NOT_BLANK",
    "PATTERNS",
    "TEXTS",
    "VISIBLE",
    "described",
    "exclusive",
]

_TIME: Final = " (ISO 8601 / RFC 3339, with a zone)."
_ENTITY_TYPE: Final = f"One of {', '.join(ENTITY_TYPES)}."

FIELDS: Final[Mapping[str, str]] = {
    "subject": "The entity the fact is about (its name).",
    "subject_type": "The subject's entity type. " + _ENTITY_TYPE,
    "relation": "The relation, snake_case (works_at, lives_in, prefers, ...).",
    "object": "The entity the relation points to (its name); or give value or nothing.",
    "object_type": "The object's entity type. " + _ENTITY_TYPE,
    "value": "A literal value instead of an object entity (a date, a number, a word).",
    "edge_type": "The kind of edge: semantic, temporal, causal or entity (decay per type).",
    "edge_types": "Only edges of these kinds (semantic, temporal, causal, entity).",
    "fact": "A fact version's id, or the short id the CLI prints; for a new fact: its "
    "sentence (default: subject relation object).",
    "facts": "The facts, appended atomically in order.",
    "confidence": "How sure the teller is, 0 to 1.",
    "valid_from": "When the fact started to hold in the world" + _TIME,
    "valid_until": "When it stopped holding (omitted: still holds / withdrawn)" + _TIME,
    "observed_at": "When the teller observed it" + _TIME,
    "ref": "The caller's own reference for this record (up to 256 characters).",
    "actor": "Who makes the change (a user or agent id), kept in the log.",
    "episode": "The conversation (episode) this belongs to, by its name.",
    "conversation": "The conversation (episode), by its name.",
    "speaker": "Who said it.",
    "text": "What was said, verbatim.",
    "at": "When it was said" + _TIME,
    "messages": "The messages, oldest first: {speaker, text, at}.",
    "reference_time": "The time relative dates in the text count from (last week)" + _TIME,
    "wait": "Extract facts from the messages before answering.",
    "query": "The question, or a name (for entities: exact, else a prefix).",
    "limit": "At most this many results.",
    "top": "Best-connected members shown per community.",
    "max_hops": "Graph hops out from the start or the seeds (0 to 6).",
    "mode": "Graph expansion: bfs (breadth first) or activation (spreading activation).",
    "valid_at": "What was true in the world then" + _TIME,
    "known_at": "What the memory had been told by then" + _TIME,
    "position": "The log as it stood at this position (instead of known_at).",
    "relations": "Only facts with these relations.",
    "min_score": "Drop hits scoring under this.",
    "window": "[start, end]: facts valid at some time in it" + _TIME,
    "trace": "Also return trace: each stage's best candidates, counts and milliseconds.",
    "entity": "An entity's name (any case, aliases too).",
    "entity_type": "The entity's type, when the name is ambiguous. " + _ENTITY_TYPE,
    "start": "The entity to start from (its name).",
    "reason": "Why (kept in the log; free of personal data for an erasure).",
    "slot": "A slot id: every version of one fact.",
    "since": "Changes recorded after this time" + _TIME,
    "until": "Up to this time" + _TIME,
    "fact_id": "A fact version's id.",
    "alias": "The other name.",
    "source": "The fact (or entity, for a merge) the link or merge goes from.",
    "target": "The fact (or entity, for a merge) it goes to.",
    "link_type": "supersedes, caused_by, part_of, related_to or depends_on.",
    "strength": "How strong the link is, in (0, 1].",
    "depth": "Links walked out from the fact (1 to 3).",
    "Idempotency-Key": "Retrying with the same key and body returns the first result.",
}
"""The description of every request field, by name."""

ENUMS: Final[Mapping[str, tuple[str, ...]]] = {
    "edge_type": (*EDGE_TYPES, *EDGE_TYPE_ALIASES),
    "edge_types": (*EDGE_TYPES, *EDGE_TYPE_ALIASES),
    "mode": ("bfs", "activation"),
    "link_type": LINK_TYPES,
}
"""The fixed values of the fields that have them (for a list: of its items). Entity types
are listed by the types that refuse others (`EntityType`): a fact's types are resolved
leniently (an unknown one is stored as concept), a lookup's filter by any text."""


BOUNDS: Final[Mapping[str, tuple[int, int | None]]] = {
    "limit": (1, 100),
    "max_hops": (0, 6),
    "depth": (1, 3),
    "top": (1, 50),
    "position": (0, None),
}
"""The range the server takes for each integer field of these names."""

NAMED: Final = frozenset({"subject", "relation", "object", "entity", "alias", "start", "speaker"})
"""Names: each must hold a character normalization keeps (`pattern` VISIBLE)."""
TEXTS: Final = frozenset({"text", "query"})
"""Free texts: each must hold a character other than a space (`pattern` NOT_BLANK)."""
NOT_BLANK: Final = r"\S"
VISIBLE: Final = (
    r"[^\u0000-\u0020\u007f-\u00a0\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891"
    r"\u08e2\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000\ufeff"
    r"\ufff9-\ufffb]"
)
"""A character other than a space, a control or a format character of the Basic Multilingual
Plane (what `apexmem.domain.names.clean` drops): a name needs one (tests/unit/test_visible.py)."""
FACT_ID: Final = r"^[0-9a-fA-F](?:-?[0-9a-fA-F]){3,31}(?::[0-9]{1,10})?$"
"""A fact id: whole, or as the tables print it (at least 4 of its hex digits, `:VERSION`)."""

PATTERNS: Final[Mapping[str, Mapping[str, str]]] = {
    "FactGraphIn": {"fact": FACT_ID},
    "LinkIn": {"source": FACT_ID, "target": FACT_ID},
    "MergeIn": {"source": VISIBLE, "target": VISIBLE},
}
"""Fields whose rule depends on the request type they are in (`source` is a fact id in a
link, an entity's name in a merge), by type and field."""

EXCLUSIVE: Final[Mapping[str, tuple[str, str]]] = {"FactIn": ("object", "value")}
"""Request types with two fields never given together (both not null)."""


def exclusive(first: str, second: str) -> dict[str, Any]:
    """What a request giving both `first` and `second` (as strings) matches: the type's
    schema says `not` this."""
    both = {first: {"type": "string"}, second: {"type": "string"}}
    return {"required": [first, second], "properties": both}


def described(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` (a JSON schema with `$defs`) with every property described, every field of
    `ENUMS` limited to its values and the rules of `PATTERNS` and `EXCLUSIVE` stated (in
    place; returned)."""
    definitions: dict[str, Any] = schema.get("$defs", {})
    for kind, node in [("", schema), *definitions.items()]:
        if kind in EXCLUSIVE:
            node.setdefault("not", exclusive(*EXCLUSIVE[kind]))
        for name, pattern in PATTERNS.get(kind, {}).items():
            node["properties"][name].setdefault("pattern", pattern)
        for name, prop in node.get("properties", {}).items():
            if name in TEXTS:
                prop.setdefault("pattern", NOT_BLANK)
            if name in FIELDS:
                prop.setdefault("description", FIELDS[name])
            if name in ENUMS:
                _limit(prop, list(ENUMS[name]))
            if name in NAMED:
                prop.setdefault("pattern", VISIBLE)
    return schema


def _limit(prop: dict[str, Any], values: list[str]) -> None:
    """The string schema inside `prop` (itself, a nullable one, or a list's items) takes
    only `values`."""
    for option in [prop, *prop.get("anyOf", []), *prop.get("oneOf", [])]:
        if option.get("type") == "string" and "enum" not in option:
            option["enum"] = values
        elif option.get("type") == "array" and option.get("items", {}).get("type") == "string":
            option["items"].setdefault("enum", values)
