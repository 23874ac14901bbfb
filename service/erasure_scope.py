"""Which records a forget request erases: decided from the log alone, in two passes.

Pure over the events it is given (no I/O): the caller reads the whole log twice under the
write lock, so the scope cannot miss what another writer appends meanwhile, and nothing
depends on read models that may lag or have evicted rows. What is erased, and why, is
written down in docs/explanation/erasure.md; in short:

- an entity: its own stream and those of entities merged into it, its name claims, every
  fact version with it as subject or object or whose sentence or value names it, every
  message that mentions it (by extracted mention or by name, or spoken by it) with that
  message's mentions and extraction, every fact read out of such a message, community
  summaries that include it or name it, and later observations of other entities whose
  summary names it (a first observation stays: it is the other entity);
- an episode: its messages, their mentions and extractions, every fact version asserted in
  it or read out of its messages, and every reinforcement made in it.

Whole records are erased (every event that refers to an erased fact version or message
goes with it, a link between facts naming one included), so what remains still folds and
projects: read models are the old ones minus the erased.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any
from uuid import UUID

import msgspec

from apexmem.events.entity import AliasClaimed, EntityMerged, EntityObserved
from apexmem.events.envelope import RecordedEvent
from apexmem.events.episode import EntitiesMentioned, MessageRecorded
from apexmem.events.erasure import Erased
from apexmem.events.extraction import MessageExtracted
from apexmem.events.fact import (
    FactArchived,
    FactAsserted,
    FactReinforced,
    FactRetracted,
    FactSuperseded,
)
from apexmem.events.link import FactLinked
from apexmem.events.policy import CommunitySummarized
from apexmem.events.similarity import FactContradicted

__all__ = ["Scope", "entity_scope", "episode_scope", "name_pattern"]

Events = Callable[[], Iterable[RecordedEvent]]
"""Reads the whole log again, in position order (called once per pass)."""
_FACT_EVENTS = (FactReinforced, FactSuperseded, FactRetracted, FactArchived, FactContradicted)
_MESSAGE_EVENTS = (MessageRecorded, EntitiesMentioned, MessageExtracted)


class Scope(msgspec.Struct, frozen=True, kw_only=True):
    """What one request erases: positions in order, and what they held (counts)."""

    positions: list[int]
    entities: int = 0
    facts: int = 0
    messages: int = 0


def name_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """A case-insensitive match of any of these names as whole words (None: no names)."""
    kept = sorted({n.strip() for n in names if n and n.strip()}, key=len, reverse=True)
    if not kept:
        return None
    words = "|".join(re.escape(n) for n in kept)
    return re.compile(rf"(?<!\w)(?:{words})(?!\w)", re.IGNORECASE)


def entity_scope(events: Events, targets: set[UUID]) -> Scope:
    """The records to erase to forget the entities `targets` (one entity with the ones
    merged into it; merges into any of them are followed here too)."""
    ids = set(targets)
    names: set[str] = set()
    merged: dict[UUID, UUID] = {}
    claims: dict[UUID, list[tuple[str, str]]] = {}
    for e in events():
        data = e.data
        if isinstance(data, EntityMerged):
            merged[data.entity_id] = data.into
        elif isinstance(data, EntityObserved):
            claims.setdefault(data.entity_id, []).append((data.name, data.canonical_name))
        elif isinstance(data, AliasClaimed):
            claims.setdefault(data.entity_id, []).append((data.name, data.alias))
    ids |= _merged_into(merged, ids)
    for entity in ids:
        names.update(n for pair in claims.get(entity, ()) for n in pair)
    pattern = name_pattern(names)
    facts, messages = _entity_facts_and_messages(events, ids, pattern)
    return _select(events, _Wanted(ids, facts, messages, pattern, None))


def episode_scope(events: Events, episode: UUID, conversation: str) -> Scope:
    """The records to erase to forget one conversation (episode stream `episode`)."""
    messages: set[UUID] = set()
    facts: set[UUID] = set()
    read_from: dict[UUID, UUID] = {}
    for e in events():
        data = e.data
        if isinstance(data, MessageRecorded) and e.stream_id == episode:
            messages.add(data.message_id)
        elif isinstance(data, FactAsserted):
            if e.episode == conversation:
                facts.add(data.fact_id)
            _note_ref(read_from, data)
    facts |= {f for f, m in read_from.items() if m in messages}
    return _select(events, _Wanted(set(), facts, messages, None, conversation))


def _merged_into(merged: dict[UUID, UUID], ids: set[UUID]) -> set[UUID]:
    """Every entity whose merges lead into one of `ids`."""
    found: set[UUID] = set()
    for start in merged:
        seen: set[UUID] = set()
        at: UUID | None = start
        while at is not None and at not in seen:
            seen.add(at)
            if at in ids:
                found |= seen
                break
            at = merged.get(at)
    return found


def _entity_facts_and_messages(
    events: Events, ids: set[UUID], pattern: re.Pattern[str] | None
) -> tuple[set[UUID], set[UUID]]:
    """The fact versions and messages an entity's erasure takes (first pass)."""
    facts: set[UUID] = set()
    messages: set[UUID] = set()
    read_from: dict[UUID, UUID] = {}
    for e in events():
        data = e.data
        if isinstance(data, FactAsserted):
            if (
                data.subject_id in ids
                or data.object_id in ids
                or _names(pattern, data.fact, data.value)
            ):
                facts.add(data.fact_id)
            _note_ref(read_from, data)
        elif isinstance(data, MessageRecorded):
            if _names(pattern, data.text, data.speaker):
                messages.add(data.message_id)
        elif isinstance(data, EntitiesMentioned) and not ids.isdisjoint(data.entity_ids):
            messages.add(data.message_id)
    facts |= {f for f, m in read_from.items() if m in messages}
    return facts, messages


class _Wanted:
    """What a request erases, decided in the first pass: asked record by record."""

    def __init__(
        self,
        ids: set[UUID],
        facts: set[UUID],
        messages: set[UUID],
        pattern: re.Pattern[str] | None,
        episode: str | None,
    ) -> None:
        self.ids, self.facts, self.messages = ids, facts, messages
        self.pattern, self.episode = pattern, episode

    def counted(self, e: RecordedEvent) -> tuple[str, UUID] | None:
        """Whether this record goes, and what it counts as (kind "" counts as nothing)."""
        data = e.data
        if e.stream_id in self.ids:
            return ("entities", e.stream_id)
        if isinstance(data, (FactAsserted, *_FACT_EVENTS)):
            return self._fact_event(e, data)
        if isinstance(data, _MESSAGE_EVENTS):
            kind = "messages" if isinstance(data, MessageRecorded) else ""
            return (kind, data.message_id) if data.message_id in self.messages else None
        if isinstance(data, FactLinked):
            named = data.source in self.facts or data.target in self.facts
            return ("", e.stream_id) if named else None
        return ("", e.stream_id) if self._about(e, data) else None

    def _about(self, e: RecordedEvent, data: Any) -> bool:
        """A claim of one of its names, a later summary of another entity that names it
        (a first observation stays: it is the other entity), or a community summary that
        includes or names it."""
        if isinstance(data, AliasClaimed):
            return data.entity_id in self.ids
        if isinstance(data, EntityObserved):
            return e.version > 1 and _names(self.pattern, data.summary)
        if isinstance(data, CommunitySummarized):
            return not self.ids.isdisjoint(data.entity_ids) or _names(
                self.pattern, data.name, data.summary
            )
        return False

    def _fact_event(self, e: RecordedEvent, data: Any) -> tuple[str, UUID] | None:
        if isinstance(data, FactAsserted):
            return ("facts", data.fact_id) if data.fact_id in self.facts else None
        by = data.by if isinstance(data, FactContradicted) else None
        told_there = self.episode is not None and e.episode == self.episode
        if (
            data.fact_id in self.facts
            or by in self.facts
            or (
                isinstance(data, FactReinforced) and (told_there or _names(self.pattern, data.fact))
            )
        ):
            return ("", data.fact_id)
        return None


def _select(events: Events, wanted: _Wanted) -> Scope:
    """The positions of every record that holds or refers to what is erased (second pass)."""
    positions: list[int] = []
    counted: dict[str, set[UUID]] = {
        "": set(),
        "entities": set(),
        "facts": set(),
        "messages": set(),
    }
    for e in events():
        if isinstance(e.data, Erased):
            continue
        what = wanted.counted(e)
        if what is not None:
            positions.append(e.position)
            counted[what[0]].add(what[1])
    return Scope(
        positions=positions,
        entities=len(counted["entities"]),
        facts=len(counted["facts"]),
        messages=len(counted["messages"]),
    )


def _names(pattern: re.Pattern[str] | None, *texts: str | None) -> bool:
    return pattern is not None and any(t and pattern.search(t) for t in texts)


def _note_ref(read_from: dict[UUID, UUID], data: FactAsserted) -> None:
    """Remember which message a fact version was read out of, if any."""
    message = _ref_message(data.ref)
    if message is not None:
        read_from[data.fact_id] = message


def _ref_message(ref: str | None) -> UUID | None:
    """The message a fact was read out of (`ref` is `message:<id>` then)."""
    if ref is None or not ref.startswith("message:"):
        return None
    try:
        return UUID(ref[len("message:") :])
    except ValueError:
        return None
