"""Read-only queries over the read models, on both time axes: `Memory.as_of` returns one.

Fact queries leave out faded facts (confidence decayed under 0.1, see domain.decay) unless
asked `include_faded=True`. The decay is measured at the view's `known_at` (what the memory
believed then, with the rates known then), else at the clock's now. `edge_history` keeps
every version, faded or not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Final
from uuid import UUID

import msgspec
from sqlalchemy import Connection

from apexmem.domain.names import normalize_relation
from apexmem.domain.ontology import Ontology
from apexmem.domain.recall.window import event_phrase, question_window
from apexmem.domain.times import parse_time
from apexmem.events.errors import ApexmemError, ValidationError
from apexmem.events.timeutil import require_aware
from apexmem.readmodels import (
    EntityHit,
    EntityRow,
    EpisodeRow,
    FactHit,
    FactRow,
    MessageHit,
    Reached,
    ReadModels,
    Subgraph,
    all_entities,
    edge_history,
    entity_groups,
    episodes_of,
    facts_about,
    facts_of,
    find_entities,
    names_of,
    search_entities,
    search_facts,
    search_messages,
    traverse_from,
)
from apexmem.readmodels.decay import fading_at
from apexmem.readmodels.moment import NOW, Lens, Moment
from apexmem.readmodels.relations import relation_held
from apexmem.service.arguments import checked_count, checked_edge_types, checked_text
from apexmem.service.event_window import event_window
from apexmem.service.fact_links import FactGraph, fact_graph
from apexmem.service.recall import Recaller
from apexmem.service.recall_query import RecallQuery, checked_relations
from apexmem.service.recalled import Recall
from apexmem.service.similarity import Similar, Similarity

__all__ = ["UNSET", "TimeArg", "View", "as_time", "moment_of"]

TimeArg = datetime | str | None
"""A time: an aware datetime, or text in a form `parse_time` accepts."""


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()
"""A keyword not passed: the view's own time applies."""


def as_time(field: str, value: TimeArg) -> datetime | None:
    """An aware UTC datetime from a datetime or text; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        return parse_time(field, value)
    if not isinstance(value, datetime):
        raise ValidationError(
            field, value, "is not a time: give a datetime with a timezone, or ISO 8601 text"
        )
    return require_aware(field, value)


def moment_of(*, valid_at: TimeArg, known_at: TimeArg) -> Moment:
    """The moment of two times (each checked as `as_time` does; NOW when both are None)."""
    valid, known = as_time("valid_at", valid_at), as_time("known_at", known_at)
    if valid is None and known is None:
        return NOW
    return Moment(valid_at=valid, known_at=known)


class View:
    """What the memory says, as known at `known_at` (now when None), valid at `valid_at`
    (when None: current, valid at `known_at` when given, else at the clock's now).

    Every query takes `valid_at=` to override the view's own valid time. Unknown names
    give empty answers, never errors.
    """

    def __init__(
        self,
        store: ReadModels,
        *,
        ready: Callable[[], None],
        ontology: Callable[[], Ontology],
        known_at: TimeArg = None,
        valid_at: TimeArg = None,
        history_limit: int = 100,
        clock: Callable[[], datetime] | None = None,
        default_decay_rate: float = 0.01,
        recaller: Recaller | None = None,
        similarity: Similarity | None = None,
    ) -> None:
        self._store = store
        self._ready = ready
        self._ontology = ontology
        self._history_limit = history_limit
        self._clock = clock if clock is not None else (lambda: datetime.now(UTC))
        self._default_decay_rate = default_decay_rate
        self._view_recaller = recaller
        self._view_similarity = similarity
        self.known_at = as_time("known_at", known_at)
        self.valid_at = as_time("valid_at", valid_at)

    @property
    def moment(self) -> Moment:
        """The view's state: known at `known_at`, valid at `valid_at`; without `valid_at`,
        current facts are those valid at `known_at`, else at the clock's now."""
        return moment_of(valid_at=self.valid_at, known_at=self.known_at).current(self._clock())

    def _valid(self, value: TimeArg | _Unset) -> datetime | None:
        return self.valid_at if isinstance(value, _Unset) else as_time("valid_at", value)

    def _lens(
        self,
        connection: Connection,
        valid_at: datetime | None,
        *,
        edge_types: Sequence[str] = (),
        include_faded: bool = False,
    ) -> Lens:
        """The facts a query sees: valid at `valid_at` (None: current, see `moment`), known
        at the view's `known_at`, of `edge_types`, faded ones left out unless asked."""
        fading = None
        if not include_faded:
            fading = fading_at(
                connection,
                now=self._clock(),
                known_at=self.known_at,
                default=self._default_decay_rate,
            )
        return Lens(
            moment=Moment(valid_at=valid_at, known_at=self.known_at).current(self._clock()),
            edge_types=tuple(edge_types),
            fading=fading,
        )

    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        max_hops: int | None = None,
        edge_types: Sequence[str] | None = None,
        mode: str | None = None,
        include_faded: bool = False,
        include_co_mentions: bool = False,
        relations: Sequence[str] | None = None,
        min_score: float | None = None,
        window: tuple[TimeArg, TimeArg] | None = None,
        reference_time: TimeArg = None,
        trace: bool = False,
    ) -> Recall:
        """The facts and messages that best answer `query`, inside the view's state.

        As `Memory.recall` with the view's `known_at` and `valid_at`; a view records no
        usage (it is read-only).
        """
        if self._view_recaller is None:
            raise ApexmemError("this view cannot recall: take one from Memory.as_of")
        self._ready()
        if relations is not None:
            relations = self._relations("relations", relations)
        reference = as_time("reference_time", reference_time)
        asked = RecallQuery.of(
            self._view_recaller.settings,
            query,
            limit=limit,
            max_hops=max_hops,
            edge_types=edge_types,
            mode=mode,
            moment=self.moment,
            include_faded=include_faded,
            include_co_mentions=include_co_mentions,
            relations=relations,
            min_score=min_score,
            window=None if window is None else _window(window),
            reference_time=reference,
            trace=trace,
        )
        if asked.window is None and self.valid_at is None:
            asked = self._event_window(asked, reference or self.moment.now or self._clock())
        return self._view_recaller.recall(asked)

    def _event_window(self, asked: RecallQuery, now: datetime) -> RecallQuery:
        """`asked` over the window an event in its question bounds ("before she moved"),
        as the view's `known_at` knew it, when the question names no time of its own."""
        if event_phrase(asked.text) is None or question_window(asked.text, now) is not None:
            return asked
        with self._store.read() as connection:
            found = event_window(connection, asked.text, now=now, known_at=self.known_at)
        if found is None:
            return asked
        start, end, phrase = found
        return msgspec.structs.replace(asked, window=(start, end), window_phrase=phrase)

    def _relations(self, field: str, relations: object) -> list[str]:
        """`relations` as canonical relations; one neither the ontology nor any fact knows
        is a ValidationError."""
        ontology = self._ontology()

        def canonical(relation: str) -> tuple[str, bool]:
            resolved = ontology.resolve(relation)
            return resolved.canonical, not resolved.unmapped

        with self._store.read() as connection:
            return checked_relations(
                field, relations, canonical, lambda relation: relation_held(connection, relation)
            )

    def similar(self, text: str, *, kind: str = "fact", k: int = 10) -> list[Similar]:
        """The `k` entities, facts or messages (`kind`) current in the view's state whose
        text is nearest to `text`: cosine similarity of embeddings, answered by the FAISS
        index; needs `[memory.vectors] enabled` (the default)."""
        if self._view_similarity is None:
            raise ApexmemError("vectors are disabled: set [memory.vectors] enabled = true")
        self._ready()
        return self._view_similarity.similar(text, kind=kind, k=k, moment=self.moment)

    def entities(
        self, query: str | None = None, *, entity_type: str | None = None, limit: int = 20
    ) -> list[EntityRow]:
        """Entities named `query` (any case, aliases too), else those whose name starts with it.

        Without a query: every entity, in name order, up to `limit`.
        """
        if query is not None:
            checked_text("query", query)
        _checked_type(entity_type)
        checked_count("limit", limit)
        self._ready()
        with self._store.read() as connection:
            if query is None:
                return all_entities(
                    connection, known_at=self.known_at, entity_type=entity_type, limit=limit
                )
            return find_entities(
                connection, query, known_at=self.known_at, entity_type=entity_type, limit=limit
            )

    def facts_about(
        self,
        entity: str,
        *,
        valid_at: TimeArg | _Unset = UNSET,
        entity_type: str | None = None,
        include_faded: bool = False,
        relation: str | None = None,
    ) -> list[FactRow]:
        """Believed facts with the entity as subject or object (current ones by default;
        faded ones only with `include_faded`; only those of `relation`, mapped by the
        ontology, when given)."""
        checked_text("entity", entity)
        _checked_type(entity_type)
        self._ready()
        wanted = None if relation is None else set(self._relations("relation", [relation]))
        with self._store.read() as connection:
            lens = self._lens(connection, self._valid(valid_at), include_faded=include_faded)
            found = facts_about(connection, entity, lens=lens, entity_type=entity_type)
        return found if wanted is None else [f for f in found if f.relation in wanted]

    def fact_graph(self, fact: UUID | str, depth: int = 1) -> FactGraph:
        """`Memory.fact_graph` at the view's `known_at`: the links told by then, the facts
        they reach as the store held them then."""
        return fact_graph(self._store, self._ready, fact, depth, known_at=self.known_at)

    def edges_at_timestamp(
        self, entity: str, at: TimeArg, *, include_faded: bool = False
    ) -> list[FactRow]:
        """Edges (facts between two entities) touching the entity and valid at `at` (faded
        ones only with `include_faded`)."""
        checked_text("entity", entity)
        self._ready()
        when = as_time("at", at)
        with self._store.read() as connection:
            found = find_entities(connection, entity, known_at=self.known_at)
            ids = [m for row in found for m in (row.entity_id, *row.merged)]
            lens = self._lens(connection, when, include_faded=include_faded)
            return facts_of(connection, ids, lens=lens, edges_only=True)

    def traverse(
        self,
        start: str,
        *,
        max_hops: int = 2,
        edge_types: Sequence[str] = (),
        valid_at: TimeArg | _Unset = UNSET,
        include_faded: bool = False,
    ) -> Subgraph:
        """Entities within `max_hops` of `start` over believed edges (of `edge_types`, if given;
        faded ones only with `include_faded`).

        An entity merged into another (by the view's `known_at`) is reached as that one.
        """
        checked_text("start", start)
        checked_count("max_hops", max_hops)
        types = checked_edge_types("edge_types", edge_types)
        self._ready()
        when = self._valid(valid_at)
        with self._store.read() as connection:
            found = find_entities(connection, start, known_at=self.known_at)
            ids = [m for row in found for m in (row.entity_id, *row.merged)]
            if not ids:
                return Subgraph(entities=[], facts=[])
            lens = self._lens(connection, when, edge_types=types, include_faded=include_faded)
            walked = traverse_from(connection, ids, max_hops=max_hops, lens=lens)
            return _folded(connection, walked, known_at=self.known_at)

    def bfs_at_timestamp(
        self, start: str, *, max_hops: int = 2, at: TimeArg, include_faded: bool = False
    ) -> Subgraph:
        """The traversal over edges valid at `at` (any edge type)."""
        return self.traverse(start, max_hops=max_hops, valid_at=at, include_faded=include_faded)

    def edge_history(
        self, *, subject: str, relation: str, limit: int | None = None
    ) -> list[FactRow]:
        """Every version of the subject's `relation` facts (ontology-mapped), newest first."""
        checked_text("subject", subject)
        checked_text("relation", relation)
        if limit is not None:
            checked_count("limit", limit)
        self._ready()
        raw = normalize_relation("relation", relation)
        canonical = self._ontology().resolve(raw).canonical
        with self._store.read() as connection:
            return edge_history(
                connection,
                subject,
                sorted({raw, canonical}),
                known_at=self.known_at,
                limit=self._history_limit if limit is None else limit,
            )

    def episodes_for(self, entity: str, *, entity_type: str | None = None) -> list[EpisodeRow]:
        """The episodes (conversations) that mentioned the entity, first mentioned first.

        The name is looked up as `entities` does (exact, then prefix). A fact or an entity
        recorded with `episode=` mentions its entities in that episode, as do the entities a
        message was found to name; an entity merged into this one brings its episodes.
        Unknown names give an empty list.
        """
        checked_text("entity", entity)
        _checked_type(entity_type)
        self._ready()
        with self._store.read() as connection:
            found = find_entities(
                connection, entity, known_at=self.known_at, entity_type=entity_type
            )
            ids = [m for row in found for m in (row.entity_id, *row.merged)]
            return episodes_of(connection, ids, known_at=self.known_at) if ids else []

    def search_entities(self, query: str, *, limit: int = 20) -> list[EntityHit]:
        """Entities whose names or summary hold every word of `query` (as prefixes), best first."""
        checked_text("query", query)
        checked_count("limit", limit)
        self._ready()
        with self._store.read() as connection:
            return search_entities(connection, query, known_at=self.known_at, limit=limit)

    def search_facts(
        self,
        query: str,
        *,
        valid_at: TimeArg | _Unset = UNSET,
        edge_types: Sequence[str] = (),
        limit: int = 20,
        include_faded: bool = False,
    ) -> list[FactHit]:
        """Believed facts whose sentence holds every word of `query` (as prefixes), best first
        (faded ones only with `include_faded`)."""
        checked_text("query", query)
        types = checked_edge_types("edge_types", edge_types)
        checked_count("limit", limit)
        self._ready()
        when = self._valid(valid_at)
        with self._store.read() as connection:
            lens = self._lens(connection, when, edge_types=types, include_faded=include_faded)
            return search_facts(connection, query, lens=lens, limit=limit)

    def search_messages(self, query: str, *, limit: int = 20) -> list[MessageHit]:
        """Messages whose text holds every word of `query` (as prefixes), best first."""
        checked_text("query", query)
        checked_count("limit", limit)
        self._ready()
        with self._store.read() as connection:
            return search_messages(connection, query, known_at=self.known_at, limit=limit)


def _window(window: object) -> tuple[datetime, datetime]:
    """A (start, end) pair of times, each checked as `as_time` checks one."""
    if isinstance(window, str) or not isinstance(window, Sequence) or len(window) != 2:
        raise ValidationError("window", window, "is not a (start, end) pair of times")
    start, end = (as_time("window", t) for t in window)
    if start is None or end is None:
        raise ValidationError("window", window, "is not a (start, end) pair of times")
    return start, end


def _checked_type(entity_type: object) -> None:
    if entity_type is not None:
        checked_text("entity_type", entity_type)


def _folded(connection: Connection, found: Subgraph, *, known_at: datetime | None) -> Subgraph:
    """`found` with each entity merged away (by `known_at`) counted as the entity it was
    merged into, at the nearest of their distances; the edges stay as they are."""
    groups = entity_groups(connection, [r.entity_id for r in found.entities], known_at=known_at)
    root_of = {member: root for root, members in groups.items() for member in members}
    if all(root_of.get(r.entity_id, r.entity_id) == r.entity_id for r in found.entities):
        return found
    hops: dict[UUID, int] = {}
    for r in found.entities:
        root = root_of.get(r.entity_id, r.entity_id)
        hops[root] = min(hops.get(root, r.hops), r.hops)
    names = names_of(connection, hops)
    reached = [
        Reached(entity_id=e, entity_type=names[e][1], name=names[e][0], hops=h)
        for e, h in hops.items()
        if e in names
    ]
    reached.sort(key=lambda r: (r.hops, r.name))
    return Subgraph(entities=reached, facts=found.facts)
