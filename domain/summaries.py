"""Community summaries: what a summarizer is given, the `Summarizer` port, and the
deterministic extractive default. Pure; a model-backed summarizer lives at the edge, and
whatever it says is recorded as an event, so replay never asks it again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final, Protocol
from uuid import UUID

import msgspec

from apexmem.domain.names import clean, cut_utf8
from apexmem.events.base import MAX_SUMMARY_BYTES

__all__ = [
    "MAX_PROMPT_FACTS",
    "CommunityDraft",
    "DraftFact",
    "DraftMember",
    "ExtractiveSummarizer",
    "Summarizer",
    "truncate_prompt",
]

MAX_PROMPT_FACTS: Final = 20
"""Facts a prompt lists at most."""
_ELLIPSIS: Final = "…"
_TOP_ENTITIES: Final = 5
_TOP_RELATIONS: Final = 3
_TOP_FACTS: Final = 3


class DraftMember(msgspec.Struct, frozen=True, kw_only=True):
    """A member of the community to summarize."""

    entity_id: UUID
    name: str
    entity_type: str
    key: int


class DraftFact(msgspec.Struct, frozen=True, kw_only=True):
    """An edge between two members."""

    subject_id: UUID
    object_id: UUID
    relation: str
    fact: str
    confidence: float
    key: int


class CommunityDraft(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a summarizer may use: the community's name, members and inner edges."""

    fingerprint: str
    name: str
    members: tuple[DraftMember, ...]
    """In key order (first seen first)."""
    facts: tuple[DraftFact, ...]
    """In key order (asserted first first)."""
    max_prompt_bytes: int = 8192
    """`[memory.graph] community_summary_max_prompt_bytes`: the longest prompt to send."""

    def prompt(self) -> str:
        """The request a language model would get, cut to `max_prompt_bytes` (truncate_prompt)."""
        names = ", ".join(clean(m.name) for m in self.members)
        lines = "\n".join(f"- {clean(f.fact)}" for f in self.facts[:MAX_PROMPT_FACTS])
        text = (
            "Summarize the following group of related entities in 2-3 sentences. "
            "Be concise and factual.\n\n"
            f"Entities: {names}\n\nRelationships:\n{lines}"
        )
        return truncate_prompt(text, self.max_prompt_bytes)


class Summarizer(Protocol):
    """Writes a community's summary; its `name` is recorded beside every summary it wrote."""

    @property
    def name(self) -> str:
        """Which summarizer (and version) wrote a summary, e.g. `extractive.v1`."""
        ...

    def summarize(self, draft: CommunityDraft) -> str:
        """A short text saying what holds the community together."""
        ...


class ExtractiveSummarizer:
    """The default: the best-connected members, the commonest relations and the surest facts.

    Deterministic, so two detections of the same community say the same thing.
    """

    name: Final = "extractive.v1"

    def summarize(self, draft: CommunityDraft) -> str:
        """`A, B and C (4 entities), linked mostly by works_at (2) and knows (1). Fact; fact.`"""
        degree: Counter[UUID] = Counter()
        for fact in draft.facts:
            degree[fact.subject_id] += 1
            degree[fact.object_id] += 1
        members = sorted(draft.members, key=lambda m: (-degree[m.entity_id], m.key))
        top = _listed([clean(m.name) for m in members[:_TOP_ENTITIES]])
        text = f"{top} ({len(draft.members)} entities)"
        relations = Counter(f.relation for f in draft.facts)
        if relations:
            common = sorted(relations.items(), key=lambda pair: (-pair[1], pair[0]))
            said = _listed([f"{r} ({n})" for r, n in common[:_TOP_RELATIONS]])
            text += f", linked mostly by {said}"
        surest = sorted(
            draft.facts,
            key=lambda f: (-f.confidence, -(degree[f.subject_id] + degree[f.object_id]), f.key),
        )
        sentences = [clean(f.fact).strip().rstrip(".") for f in surest[:_TOP_FACTS]]
        if sentences:
            text += ". " + "; ".join(sentences)
        return cut_utf8(text + ".", MAX_SUMMARY_BYTES)


def truncate_prompt(text: str, max_bytes: int) -> str:
    """`text` if it fits in `max_bytes` UTF-8 bytes, else cut at a character boundary so that
    it ends with `…` within them.

    0 gives the empty string (no prompt, so no model call).
    """
    if max_bytes <= 0:
        return ""
    if len(text.encode()) <= max_bytes:
        return text
    room = max_bytes - len(_ELLIPSIS.encode())
    return cut_utf8(text, room) + _ELLIPSIS if room > 0 else cut_utf8(text, max_bytes)


def _listed(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"
