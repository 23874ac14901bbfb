"""Graph upkeep on a Memory: community detection and assignment, recorded as events, and
the confidence decay rates in force.

A detection reads the current graph, runs label propagation, asks the summarizer about
the communities whose fingerprint is new (and only those), and appends what it decided:
communities formed with their summaries, communities dissolved. Assignment places new
entities between detections by neighbour vote. Replay and rebuild apply the recorded
events and never ask a summarizer again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Final, Generic, TypeVar
from uuid import UUID

import msgspec
from sqlalchemy import Connection

from apexmem.domain.communities import (
    DEFAULT_EDGE_CHUNK,
    Detected,
    Plan,
    assign,
    detect,
    plan,
)
from apexmem.domain.extraction import recordable_name
from apexmem.domain.identities import community_id
from apexmem.domain.names import clean_sentence, cut_utf8
from apexmem.domain.settings import Settings
from apexmem.domain.summaries import CommunityDraft, ExtractiveSummarizer, Summarizer
from apexmem.events.base import MAX_SUMMARY_BYTES
from apexmem.events.community import CommunityDissolved, CommunityMemberAssigned
from apexmem.events.envelope import AppendResult, NewEvent
from apexmem.events.errors import ConcurrencyError
from apexmem.events.policy import CommunitySummarized
from apexmem.events.ports import LockedLog
from apexmem.readmodels import CommunityRow, ReadModels, list_communities, tracked_position
from apexmem.readmodels.communities import (
    active_edges,
    community_count,
    community_ranks,
    community_versions,
    draft_facts,
    draft_members,
    live_nodes,
    memberships,
    merged_into,
    stored_communities,
)
from apexmem.readmodels.decay import rates_at
from apexmem.readmodels.tables import GRAPH
from apexmem.service.arguments import checked_count
from apexmem.service.logs import get_logger
from apexmem.service.pipeline import Append, Pipeline, Settled, Versions
from apexmem.service.view import TimeArg, as_time

__all__ = ["Assignment", "Communities", "Detection", "Placement", "recorded"]

_logger = get_logger()
S = TypeVar("S")
T = TypeVar("T")

NO_SUMMARY: Final = "none"
"""Recorded as the summarizer when `community_summary_max_prompt_bytes = 0` asked for none."""
_DISSOLVED: Final = "not detected again: its members or edges changed"


class Detection(msgspec.Struct, frozen=True, kw_only=True):
    """What one detection did."""

    communities: int
    """Live communities after it."""
    formed: int
    """Communities new or changed: summarized and recorded."""
    unchanged: int
    """Communities found again with the same fingerprint: nothing asked, nothing written."""
    dissolved: int
    entities: int
    """Entities considered (not merged away, not archived)."""
    edges: int
    """Active edges read."""
    position: int
    """The read models' log position the detection looked at."""
    summarizer: str


class Placement(msgspec.Struct, frozen=True, kw_only=True):
    """An entity placed in a community by its neighbours' votes."""

    entity_id: UUID
    community_id: UUID
    votes: int
    cast: int


class Assignment(msgspec.Struct, frozen=True, kw_only=True):
    """What one assignment pass did."""

    placed: list[Placement]
    position: int


class Communities:
    """Community detection and assignment, recorded as events; the decay rates in force."""

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        store: ReadModels,
        settings: Settings,
        ready: Callable[[], None],
    ) -> None:
        self._pipeline = pipeline
        self._store = store
        self._settings = settings
        self._ready = ready
        self.summarizer: Summarizer = ExtractiveSummarizer()
        """Writes the summary of each new or changed community (replace it to use a model);
        its verdicts are recorded."""

    def detect_communities(
        self, *, summarizer: Summarizer | None = None, actor: str | None = None
    ) -> Detection:
        """Label propagation over the active edges; record what changed (DESIGN 5).

        Communities (two or more members) whose fingerprint is already held are left as
        they are: no summary is asked for and nothing is written. New or changed ones are
        summarized (by `summarizer`, else `self.summarizer`) and recorded; held ones not
        found again are dissolved. Edges are read `lpa_edge_chunk_size` at a time.
        """
        graph = self._settings.memory.graph
        chunk = _chunk_size(graph.lpa_edge_chunk_size)
        chosen = summarizer if summarizer is not None else self.summarizer
        recordable_name("summarizer.name", chosen.name)
        asking = _Asking(
            summarizer=chosen,
            max_prompt_bytes=graph.community_summary_max_prompt_bytes,
            concurrency=graph.community_summary_concurrency,
            actor=actor,
        )
        done = self._record(
            "detect",
            lambda connection: _read_detection(connection, chunk, asking.max_prompt_bytes),
            asking.decide,
        )
        with self._store.read() as connection:
            done = msgspec.structs.replace(done, communities=community_count(connection))
        _logger.info("communities.detected", **msgspec.structs.asdict(done))
        return done

    def assign_communities(self, *, actor: str | None = None) -> Assignment:
        """Place entities that belong to no community by their neighbours' votes.

        Cheaper than a detection between two of them: each entity with an active edge to a
        member joins the community most of its neighbours belong to (ties: the community
        formed first). The community's summary is then stale; the next detection writes
        a new one.
        """
        chunk = _chunk_size(self._settings.memory.graph.lpa_edge_chunk_size)
        done = self._record(
            "assign",
            lambda connection: _read_assignment(connection, chunk, actor),
            lambda decided: decided,
        )
        _logger.info("communities.assigned", placed=len(done.placed), position=done.position)
        return done

    def communities(self, *, limit: int = 50, top: int = 5) -> list[CommunityRow]:
        """Live communities, largest first: name, recorded summary, size, best-connected members.

        At most `limit` communities, each with its `top` best-connected members (0 gives none).
        """
        limit, top = checked_count("limit", limit), checked_count("top", top)
        self._ready()
        with self._store.read() as connection:
            return list_communities(connection, limit=limit, top=top)

    def decay_rates(self, *, known_at: TimeArg = None) -> dict[str, float]:
        """The confidence decay rate (per day) of every edge type, as known at `known_at`
        (now when None; a datetime or ISO 8601 text): the latest `set_decay_rate`, else
        `default_decay_rate`."""
        at = as_time("known_at", known_at)
        self._ready()
        with self._store.read() as connection:
            return rates_at(
                connection, default=self._settings.memory.graph.default_decay_rate, known_at=at
            )

    def _record(
        self,
        kind: str,
        read: Callable[[Connection], S],
        decide: Callable[[S], tuple[list[NewEvent], T]],
    ) -> T:
        return recorded(
            self._pipeline, kind, ready=self._ready, store=self._store, read=read, decide=decide
        )


def recorded(
    pipeline: Pipeline,
    kind: str,
    *,
    ready: Callable[[], None],
    store: ReadModels,
    read: Callable[[Connection], S],
    decide: Callable[[S], tuple[list[NewEvent], T]],
    outdated: Callable[[LockedLog, S], bool] | None = None,
) -> T:
    """Run an upkeep operation through the pipeline: read one read-model snapshot and decide
    (a summarizer may be asked) outside the write lock; under it, `outdated` tells when
    something the snapshot showed has changed since (stream versions tell the rest)."""

    def prepare(_: int) -> _Recorded[S, T] | Settled[T]:
        ready()
        with store.read() as connection:
            seen = read(connection)
        events, result = decide(seen)
        if not events:
            return Settled(result)
        return _Recorded(kind, seen, events, result, outdated)

    return pipeline.run(kind, prepare)


class _Recorded(Generic[S, T]):
    """One attempt of an upkeep operation: decided from its snapshot, appended if current."""

    def __init__(
        self,
        kind: str,
        seen: S,
        events: list[NewEvent],
        result: T,
        outdated: Callable[[LockedLog, S], bool] | None,
    ) -> None:
        self._kind, self._seen, self._events = kind, seen, events
        self._result, self._outdated = result, outdated

    def decide(self, log: LockedLog) -> Append:
        if self._outdated is not None and self._outdated(log, self._seen):
            raise ConcurrencyError(f"the log moved on under this {self._kind}")
        return Append(events=self._events)

    def finish(self, appended: AppendResult | None) -> T:
        return self._result

    def conflicted(self) -> None:
        return None


class _Detecting(msgspec.Struct, frozen=True, kw_only=True):
    """What a detection read in one snapshot."""

    todo: Plan
    drafts: list[CommunityDraft]
    versions: dict[UUID, int]
    entities: int
    edges: int
    position: int


class _Asking:
    """A detection's summarizer and what it already said (kept across retries, by fingerprint)."""

    def __init__(
        self,
        *,
        summarizer: Summarizer,
        max_prompt_bytes: int,
        concurrency: int,
        actor: str | None,
    ) -> None:
        self.summarizer = summarizer
        self.max_prompt_bytes = max_prompt_bytes
        self.concurrency = concurrency
        self.actor = actor
        self.said: dict[str, tuple[str, str]] = {}

    def decide(self, seen: _Detecting) -> tuple[list[NewEvent], Detection]:
        """Summaries of the communities to form (outside any transaction: a model may be
        slow), `concurrency` asked at once, then the events to append."""
        asked = {d.fingerprint: d for d in seen.drafts if d.fingerprint not in self.said}
        if len(asked) > 1 and self.concurrency > 1:
            with ThreadPoolExecutor(self.concurrency, thread_name_prefix="summary") as pool:
                answers = list(pool.map(partial(_summarize, self.summarizer), asked.values()))
        else:
            answers = [_summarize(self.summarizer, d) for d in asked.values()]
        self.said.update(zip(asked, answers, strict=True))
        todo = seen.todo
        done = Detection(
            communities=0,
            formed=len(todo.form),
            unchanged=todo.unchanged,
            dissolved=len(todo.dissolve),
            entities=seen.entities,
            edges=seen.edges,
            position=seen.position,
            summarizer=NO_SUMMARY if self.max_prompt_bytes == 0 else self.summarizer.name,
        )
        return _detection_events(todo, seen.versions, self.said, self.actor), done


def _read_detection(connection: Connection, chunk: int, max_prompt_bytes: int) -> _Detecting:
    """Detect on one snapshot of the graph and plan against the communities held."""
    nodes = live_nodes(connection)
    edges = list(active_edges(connection, chunk))
    found = detect(nodes, edges, merged=merged_into(connection))
    todo = plan(found, stored_communities(connection))
    streams = [
        *(s.community_id for s in todo.dissolve),
        *(community_id(d.fingerprint) for d in todo.form),
    ]
    return _Detecting(
        todo=todo,
        drafts=_drafts(connection, todo.form, max_prompt_bytes),
        versions=community_versions(connection, streams),
        entities=len(nodes),
        edges=len(edges),
        position=tracked_position(connection, GRAPH),
    )


def _read_assignment(
    connection: Connection, chunk: int, actor: str | None
) -> tuple[list[NewEvent], Assignment]:
    """Vote on one snapshot of the graph; one event per entity placed."""
    ranks = community_ranks(connection)
    chosen = assign(
        live_nodes(connection),
        active_edges(connection, chunk),
        memberships(connection),
        ranks,
        merged=merged_into(connection),
    )
    numbered = Versions(community_versions(connection, list(ranks)), actor=actor)
    events, placed = [], []
    for entity, vote in chosen:
        data = CommunityMemberAssigned(entity_id=entity, votes=vote.votes, cast=vote.cast)
        events.append(numbered.event(vote.community, data))
        placed.append(
            Placement(
                entity_id=entity, community_id=vote.community, votes=vote.votes, cast=vote.cast
            )
        )
    return events, Assignment(placed=placed, position=tracked_position(connection, GRAPH))


def _chunk_size(configured: int) -> int:
    if configured > 0:
        return configured
    _logger.warning(
        "communities.chunk_size_defaulted", lpa_edge_chunk_size=configured, used=DEFAULT_EDGE_CHUNK
    )
    return DEFAULT_EDGE_CHUNK


def _drafts(connection: Connection, found: Sequence[Detected], limit: int) -> list[CommunityDraft]:
    """What the summarizer is told about each community to summarize."""
    members = draft_members(connection, [m.entity_id for d in found for m in d.members])
    facts = draft_facts(connection, [e for d in found for e in d.edges])
    return [
        CommunityDraft(
            fingerprint=d.fingerprint,
            name=d.name,
            members=tuple(members[m.entity_id] for m in d.members if m.entity_id in members),
            facts=tuple(facts[e.fact_id] for e in d.edges if e.fact_id in facts),
            max_prompt_bytes=limit,
        )
        for d in found
    ]


def _summarize(summarizer: Summarizer, draft: CommunityDraft) -> tuple[str, str]:
    """(summary, summarizer name); an empty summary when none was asked for, or when the
    summarizer failed or answered something that is not text."""
    if draft.max_prompt_bytes == 0:
        return "", NO_SUMMARY
    try:
        text: object = summarizer.summarize(draft)
        if not isinstance(text, str):
            raise TypeError(f"summarize returned {type(text).__name__}, not str")
        summary = cut_utf8(clean_sentence(text).strip(), MAX_SUMMARY_BYTES)
    except Exception as e:  # a plug-in's failure must not lose the detection
        _logger.warning(
            "communities.summary_failed",
            summarizer=summarizer.name,
            community=draft.name,
            error=repr(e),
        )
        return "", summarizer.name
    return summary, summarizer.name


def _detection_events(
    todo: Plan,
    versions: dict[UUID, int],
    summaries: dict[str, tuple[str, str]],
    actor: str | None,
) -> list[NewEvent]:
    """Dissolutions first, then formations, each at the next version of its stream."""
    numbered = Versions(versions, actor=actor)
    events = [
        numbered.event(
            s.community_id, CommunityDissolved(fingerprint=s.fingerprint, reason=_DISSOLVED)
        )
        for s in todo.dissolve
    ]
    for d in todo.form:
        stream = community_id(d.fingerprint)
        summary, by = summaries[d.fingerprint]
        data = CommunitySummarized(
            fingerprint=d.fingerprint,
            entity_ids=[m.entity_id for m in d.members],
            name=d.name,
            summary=summary,
            summarizer=by,
        )
        events.append(numbered.event(stream, data))
    return events
