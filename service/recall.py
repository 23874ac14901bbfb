"""The recall pipeline (DESIGN 6): seeds, graph expansion, three ranked lists, fusion, hits.

1. Full text: facts and messages holding any of the question's content words, by BM25.
2. Vectors: the facts and messages nearest to the question's embedding (FAISS).
3. Graph: seeds (entities named by the question's words, or nearest to it, scored with
   their structure; a conversation participant it names only when its verb asks a
   relation of them), then a BFS or a spreading activation over believed edges, each edge
   scored `match * 1/(1+hop) * evolved_weight * type_weight`.
The three lists are fused by reciprocal rank fusion (k = 60), a message and the facts
learned from it counted as one piece of evidence (one place in each list, shown once), a
fact read out of a message never moving a turn down a list, a fact's share weighed by its
confidence; facts are deduplicated by (subject, relation,
object, edge type), and the result cut to `limit`. Everything is read in one
read transaction, in the state asked for (`valid_at`, `known_at`). A time budget ends
the work early with what was found, marked as cut short.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from datetime import datetime
from functools import partial
from time import monotonic
from typing import Any, Final, Literal
from uuid import UUID
from weakref import WeakKeyDictionary

import msgspec
import numpy as np
from sqlalchemy import Connection

from apexmem.domain.names import cut_utf8
from apexmem.domain.recall import (
    EDGE_TYPE_WEIGHTS,
    MAX_RECENCY_BOOST,
    ActivationParams,
    Edge,
    classify_edge_types,
    composite_score,
    placed,
    ranked,
    score_with_decay,
    spread,
    weighted_rank_fusion,
)
from apexmem.domain.recall.conversation import boosted, in_context, without_names
from apexmem.domain.recall.evidence import shown_by_default, stands_in
from apexmem.domain.recall.fusion import counted_once
from apexmem.domain.recall.predicates import asked_relations
from apexmem.domain.recall.seeds import hybrid_seeds, structural_scores
from apexmem.domain.recall.window import question_window, window_why
from apexmem.domain.search_text import MAX_QUERY_BYTES, content_terms, search_terms
from apexmem.domain.settings import Settings
from apexmem.events.timeutil import from_micros
from apexmem.projections.vectors import Kind
from apexmem.readmodels import ReadModels, names_of
from apexmem.readmodels.conversation import entities_named, neighbours
from apexmem.readmodels.decay import ConfidenceNow, Fading, fading_of
from apexmem.readmodels.hit_rows import (
    ACTOR,
    CONFIDENCE,
    EDGE_TYPE,
    OBSERVED_AT,
    RELATION,
    States,
    fact_states,
)
from apexmem.readmodels.moment import Lens
from apexmem.readmodels.near_rows import Near, facts_near, messages_near
from apexmem.readmodels.prepared import id_of
from apexmem.readmodels.recall import (
    FactKey,
    MessageKey,
    message_rows,
    ranked_facts,
    ranked_messages,
    seed_structure,
    speakers_and_rates,
    visible_facts,
    visible_messages,
    word_counts,
)
from apexmem.readmodels.rows import MessageRow
from apexmem.readmodels.search import entity_counts, matching_entities, visible_entities
from apexmem.readmodels.spread_edges import activation_edges
from apexmem.readmodels.store import time_limited
from apexmem.readmodels.traverse import Costs, Walked, expand
from apexmem.readmodels.vector_index import ItemsOf
from apexmem.service.nearest import Rounds, nearest_shown
from apexmem.service.prism import query_costs
from apexmem.service.recall_links import follow_links
from apexmem.service.recall_query import RecallQuery
from apexmem.service.recalled import Provenance, Recall, RecallHit
from apexmem.service.similarity import Similarity
from apexmem.service.trace import TraceCandidate, Tracer, TraceStage

__all__ = ["Recaller"]

_VECTOR_ROUNDS: Final = 2
"""Questions to the vector index a list asks at most (the facts' nearest 3x, then 12x
the pool): past the items told since a recent moment, and bounded for an old one (full
text and the graph find the rest)."""
_FRONTIER: Final = 20
"""Entities a recall's BFS expands per hop at most (the strongest): an edge two hops out
scores a third of one at the seed, and a hub's neighbours would otherwise cost thousands
of rows for items that never reach the top of the list."""
_MIN_TIMEOUT_MS: Final = 100
"""A budget of 0 means this (as in the reference): a recall always gets some time."""

_Key = tuple[Literal["fact", "message"], str]
"""A candidate: its kind and its id as stored (hex)."""


class Recaller:
    """Answers `recall` over the read models and the vector index of one memory."""

    def __init__(
        self,
        store: ReadModels,
        similarity: Similarity | None,
        settings: Settings,
        clock: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._similarity = similarity
        self.settings = settings
        """What `RecallQuery.of` takes the defaults from."""
        self._clock = clock
        self._questions: WeakKeyDictionary[_Run, np.ndarray] = WeakKeyDictionary()
        """Each recall's question vector, from its seeds to its BFS (PRISM's costs)."""

    def recall(self, query: RecallQuery) -> Recall:
        """The facts and messages that best answer `query` (see the module docstring).

        Faded facts (decayed confidence under 0.1, measured at the moment's `known_at`,
        else now) are left out unless `query.include_faded`.
        """
        terms = content_terms(query.text)
        if not terms or query.limit == 0:
            traced: list[TraceStage] | None = [] if query.trace else None
            return Recall(hits=[], edge_types=list(query.edge_types or ()), trace=traced)
        trace: Tracer[_Key] | None = Tracer() if query.trace else None
        activation = self.settings.memory.graph.spreading_activation
        budget = max(activation.recall_timeout_ms, 0) or _MIN_TIMEOUT_MS
        with self._store.read() as connection:
            # The participants named and the decay rates: one statement (one round trip).
            words = search_terms(query.text) if self.settings.memory.recall.speaker_boost else None
            named, rates = speakers_and_rates(
                connection,
                words,
                known_at=query.moment.known_at,
                default=self.settings.memory.graph.default_decay_rate,
            )
            # The first embedding in a process loads the model.
            vector = self._embed(without_names(query.text, named) or query.text)
            decay = fading_of(rates, self._clock(), query.moment.known_at)
            run = _Run(
                query,
                terms=terms,
                pool=max(query.limit, self.settings.memory.recall.candidates),
                decay=decay,
                weights=self._weights(),
                now=query.reference_time or self._clock(),
            )
            run.named = named
            if named:
                run.favoured_subjects = entities_named(connection, named)
            chosen = self.settings.memory.recall
            run.shares = (chosen.turn_before_share, chosen.turn_after_share, chosen.speaker_boost)
            run.relation_boost = chosen.relation_boost
            if vector is not None:  # a missing or stale index is built outside the budget
                assert self._similarity is not None
                self._similarity.index.sync(connection)
            run.deadline = monotonic() + budget / 1000.0
            run.trace = trace
            run.lap("question")
            with time_limited(connection, run.out_of_time):  # a slow statement is stopped too
                self._full_text(connection, run)
                run.lap("full text")
                if vector is not None and not run.out_of_time():
                    self._vectors(connection, run, vector)
                    run.lap("vector")
                if not run.out_of_time():
                    seeds = self._seeds(connection, run, vector)
                    run.lap_seeds()
                    if query.mode == "bfs":
                        self._bfs(connection, run, seeds, query.max_hops)
                    else:
                        self._activation(connection, run, seeds, query.max_hops)
                    run.lap(f"expansion ({query.mode})")
                if not run.out_of_time():
                    follow_links(connection, run, query.max_hops)
                    run.lap("fact links")
                if not run.out_of_time():
                    self._context(connection, run)
                    run.lap_context()
            return run.result(connection)

    def _context(self, connection: Connection, run: _Run) -> None:
        """What the fusion adds to the lists: each candidate message's neighbours."""
        chosen = self.settings.memory.recall
        if not (chosen.turn_before_share or chosen.turn_after_share):
            return
        around = neighbours(connection, list(run.messages))
        wanted = {n for pair in around.values() for n in pair if n is not None}
        run.messages.update(
            visible_messages(connection, wanted - run.messages.keys(), moment=run.said)
        )
        for item, pair in around.items():
            previous, following = (n if n in run.messages else None for n in pair)
            run.around[("message", item)] = (
                None if previous is None else ("message", previous),
                None if following is None else ("message", following),
            )

    def _weights(self) -> dict[str, float]:
        chosen = self.settings.memory.recall
        return {
            "full text": chosen.full_text_weight,
            "vector": chosen.vector_weight,
            "graph": chosen.graph_weight,
        }

    def _embed(self, query: str) -> np.ndarray | None:
        if self._similarity is None:
            return None
        vector: np.ndarray = self._similarity.embedder.embed([cut_utf8(query, MAX_QUERY_BYTES)])[0]
        return vector

    def _full_text(self, connection: Connection, run: _Run) -> None:
        found: list[tuple[float, _Key]] = []
        topic = run.topic_terms()
        # Both lists' words, and the seeds' (entities), in one statement.
        entities = entity_counts(run.terms, run.size * 3)
        counts = word_counts(connection, topic, also=entities)
        run.entity_counts = counts[entities.table.name]
        pool = run.pool
        for fact, score in ranked_facts(connection, topic, lens=run.lens, size=pool, counts=counts):
            run.facts[fact.fact_id] = fact
            found.append((score, ("fact", fact.fact_id)))
        said = ranked_messages(connection, topic, moment=run.said, size=pool, counts=counts)
        for message, score in said:
            run.messages[message.message_id] = message
            found.append((score, ("message", message.message_id)))
        run.add_list("full text", found)

    def _vectors(self, connection: Connection, run: _Run, vector: np.ndarray) -> None:
        assert self._similarity is not None
        index = self._similarity.index

        def nearest(kind: Kind, items: ItemsOf[Near], wanted: int) -> list[tuple[Near, float]]:
            # Each round's items and what the moment sees of them: one statement.
            return index.nearest_items(
                kind, vector, wanted, items=items, connection=connection, sync=False
            )

        def seen(near: list[tuple[Near, float]]) -> dict[str, Any]:
            return {item: key for (item, key), _ in near if key is not None}

        pool = run.pool
        near_facts, facts = nearest_shown(
            partial(nearest, "fact", partial(facts_near, lens=run.lens)),
            seen,
            Rounds(first=pool * 3, enough=pool, rounds=_VECTOR_ROUNDS),
            out_of_time=run.out_of_time,
        )
        near_messages, messages = nearest_shown(
            partial(nearest, "message", partial(messages_near, moment=run.said)),
            seen,
            Rounds(first=pool, enough=pool, rounds=_VECTOR_ROUNDS),
            out_of_time=run.out_of_time,
        )
        run.facts.update(facts)
        run.messages.update(messages)
        found: list[tuple[float, _Key]] = [
            (s, ("fact", i)) for (i, _), s in near_facts if i in facts
        ]
        found += [(s, ("message", i)) for (i, _), s in near_messages if i in messages]
        run.add_list("vector", found)

    def _seeds(
        self, connection: Connection, run: _Run, vector: np.ndarray | None
    ) -> dict[UUID, float]:
        if vector is not None:
            self._questions[run] = vector
        matches: dict[UUID, float] = {}
        # Every content word (the reference looks up the first five): a name told late in a
        # long question ("... everywhere today Alice") seeds too; rarer words go first.
        words = run.terms
        known_at = run.lens.known_at
        found = matching_entities(
            connection, words, known_at=known_at, limit=run.size * 3, counts=run.entity_counts
        )
        for hit in found:
            matches[hit.entity_id] = hit.score
            run.seed_names[hit.entity_id] = (hit.name, hit.entity_type)
        if not matches and vector is not None and self._similarity is not None:
            index = self._similarity.index

            def nearest(wanted: int) -> list[tuple[UUID, float]]:
                return index.nearest("entity", vector, wanted, connection=connection, sync=False)

            def shown(near: list[tuple[UUID, float]]) -> dict[UUID, UUID]:
                return visible_entities(connection, [i for i, _ in near], known_at=known_at)

            near, roots = nearest_shown(
                nearest,
                shown,
                Rounds(first=run.size, enough=run.size, rounds=_VECTOR_ROUNDS),
                out_of_time=run.out_of_time,
            )
            for entity, score in near:
                if entity in roots and (roots[entity] in matches or len(matches) < run.size):
                    root = roots[entity]
                    matches[root] = max(matches.get(root, 0.0), score, 0.0)
        if not run.asked:
            # Who is asked about is boosted, not searched for (their names are not search
            # words either): from a participant the question names, the walk would rank
            # whatever is known of them. It walks from them when the question's verb asks
            # a relation of them ("Where does Priya live?").
            matches = {e: s for e, s in matches.items() if e.hex not in run.favoured_subjects}
        if not matches:
            return {}
        # Structure weighs 0.4 against the match's 0.6: only the best matches can be seeds.
        best = sorted(matches, key=lambda e: (-matches[e], e))[: run.size * 3]
        matches = {e: matches[e] for e in best}
        structure, communities = seed_structure(connection, list(matches), lens=run.walk_lens)
        chosen = self.settings.memory.graph.spreading_activation
        seeds = hybrid_seeds(
            matches,
            structural_scores(structure),
            limit=run.size,
            weight=chosen.seed_structural_weight,
            communities=communities,
            community_cap=chosen.seed_community_cap,
        )
        unnamed = [s for s in seeds if s not in run.seed_names]
        if unnamed:
            run.seed_names.update(names_of(connection, unnamed))
        run.seeds = seeds
        return seeds

    def _bfs(self, connection: Connection, run: _Run, seeds: dict[UUID, float], hops: int) -> None:
        rate = self.settings.memory.graph.temporal_decay_rate
        now = run.lens.valid_at or self._clock()

        confidence_now = run.confidence_now

        def score(edge: Walked, hop: int, match: float) -> float:
            confidence = confidence_now(edge.confidence, edge.observed_at, edge.edge_type)
            found = composite_score(
                match, hop, confidence, edge.edge_type, retrieval_count=edge.retrievals
            )
            if rate > 0:
                found = score_with_decay(found, from_micros(edge.valid_from), now, rate)
            return found

        # composite_score is match / (1 + hop) times at most 1 (evolved weight) and the
        # largest type weight walked; the decay adds at most MAX_RECENCY_BOOST. The
        # confidence decayed is at most the stored one, which bounds what is left unread.
        types = run.walked or list(EDGE_TYPE_WEIGHTS)
        ceiling = max(EDGE_TYPE_WEIGHTS.get(t, 1.0) for t in types)
        if rate > 0:
            ceiling *= MAX_RECENCY_BOOST
        expansion = expand(
            connection,
            seeds,
            score=score,
            keep=run.pool,
            ceiling=ceiling,
            max_hops=hops,
            lens=run.walk_lens,
            frontier_limit=_FRONTIER,
            out_of_time=run.out_of_time,
            evolved=True,  # the composite score: match / (1 + hop) * evolved weight * ...
            costs=self._costs(connection, run),
        )
        run.cut_short |= expansion.cut_short
        found: list[tuple[float, _Key]] = []
        names: dict[str, str] = {}
        for kept in expansion.edges:
            edge, hop = kept.edge, kept.hop
            run.facts.setdefault(edge.fact_id, FactKey(*edge[:9]))
            key: _Key = ("fact", edge.fact_id)
            found.append((kept.score, key))
            where = "an edge of" if hop == 0 else f"{hop} hop{'s' if hop > 1 else ''} from"
            seed = names.get(kept.seed)
            if seed is None:
                seed = names[kept.seed] = run.seed_name(UUID(kept.seed))
            run.graph_why[key] = f"graph: {where} {seed} ({edge.edge_type}, {kept.score:.2f})"
        run.add_list("graph", found)

    def _costs(self, connection: Connection, run: _Run) -> Costs | None:
        """PRISM's costs for the BFS when `query_sensitive_cost` is on (`service.prism`)."""
        if not self.settings.memory.graph.query_sensitive_cost:
            return None
        model = "" if self._similarity is None else self._similarity.embedder.name
        return query_costs(connection, self._questions.get(run), model=model)

    def _activation(
        self, connection: Connection, run: _Run, seeds: dict[UUID, float], hops: int
    ) -> None:
        params = msgspec.structs.replace(
            ActivationParams.of(self.settings.memory.graph), max_hops=hops
        )

        def edges_of(ids: Sequence[str]) -> list[Edge[str]]:
            return activation_edges(
                connection,
                ids,
                lens=run.walk_lens,
                confidence_now=run.confidence_now,
                dated=params.temporal_decay_rate > 0,
            )

        result = spread(
            {seed.hex: score for seed, score in seeds.items()},
            edges_of,
            params,
            now=run.lens.valid_at or self._clock(),
            edge_types=run.walked,
            out_of_time=run.out_of_time,
        )
        run.cut_short |= result.cut_short
        found: list[tuple[float, _Key]] = []
        kept = result.facts[: run.pool]  # strongest first
        rows = visible_facts(
            connection, [edge.edge_id for edge, _ in kept], lens=run.lens.typed(())
        )
        for edge, activation in kept:
            run.facts.setdefault(edge.edge_id, rows[edge.edge_id])
            key: _Key = ("fact", edge.edge_id)
            found.append((activation, key))
            run.graph_why[key] = f"activation {activation:.2f} over a {edge.edge_type} edge"
        run.add_list("graph", found)


def _window(query: RecallQuery, now: datetime) -> tuple[datetime, datetime, str] | None:
    """The window given, else (when no `valid_at` is) the one the question names."""
    if query.window is not None:
        return (*query.window, query.window_phrase)
    if query.moment.valid_at is not None:
        return None
    return question_window(query.text, now)


class _Run:
    """One recall's working state: its query, the items found and the ranked lists."""

    def __init__(
        self,
        query: RecallQuery,
        *,
        terms: list[str],
        pool: int,
        decay: Fading,
        weights: dict[str, float],
        now: datetime,
    ) -> None:
        self.size = query.limit
        self.weights = weights
        self.pool = pool
        self.terms = terms
        explicit = query.edge_types
        self.walked = list(explicit) if explicit is not None else classify_edge_types(query.text)
        fading = None if query.include_faded else decay
        self.co_mentions = query.include_co_mentions
        """Whether co-mention facts are shown (`domain.recall.evidence`)."""
        self.said = query.moment
        """What messages are recalled in: said by its `valid_at`, recorded by its `known_at`."""
        asked_window = _window(query, now)
        self.window = None if asked_window is None else asked_window[:2]
        """The valid-time window asked about (explicit, or named by the question), if any."""
        self.window_why = "" if asked_window is None else window_why(*asked_window)
        held = query.moment
        if self.window is not None and held.valid_at is None:
            # Facts true at some time in the period asked about ("in 2019": each job then).
            held = msgspec.structs.replace(held, during=self.window)
        self.lens = Lens(moment=held, edge_types=explicit or (), fading=fading)
        """What every fact returned must be (of the types asked for, when asked)."""
        self.walk_lens = self.lens.typed(tuple(self.walked))
        """What the graph walks (the types asked for, else those the router picked)."""
        self.deadline = math.inf  # set once the fixed costs before the search are paid
        self.cut_short = False
        self.confidence_now = ConfidenceNow(decay)
        """Facts' confidence decayed to the moment asked about (what scores them)."""
        self.facts: dict[str, FactKey] = {}
        self.messages: dict[str, MessageKey] = {}
        # Each ranked list by name as found: what recall shows, best first, each once.
        self.found: list[tuple[str, list[_Key]]] = []
        self._members: dict[_Key, list[_Key]] = {}
        """Each piece of evidence the fusion ranks (its lead, `_leads`) -> the items it holds."""
        self._lead: dict[_Key, _Key] = {}
        self._own: dict[_Key, float] = {}
        """Each item's own fused score (which item of a piece of evidence is shown)."""
        self.graph_why: dict[_Key, str] = {}
        self.seeds: dict[UUID, float] = {}
        self.seed_names: dict[UUID, tuple[str, str]] = {}
        self.named: set[str] = set()
        """The participants the question names (lowercased speakers)."""
        self.favoured_subjects: set[str] = set()
        """The entities (hex) those participants are: facts about them are boosted too."""
        self.around: dict[_Key, tuple[_Key | None, _Key | None]] = {}
        self.context_why: dict[_Key, list[str]] = {}
        self.relations = None if query.relations is None else set(query.relations)
        self.min_score = query.min_score
        self.asked = asked_relations(search_terms(query.text))
        """The relations the question's verbs ask about (`domain.recall.predicates`)."""
        self.relation_boost = 0.0
        self.shares = (0.0, 0.0, 0.0)
        """(turn_before_share, turn_after_share, speaker_boost) of the settings."""

    trace: Tracer[_Key] | None = None
    """The trace, when the recall was asked for one (`service.trace`)."""
    entity_counts: dict[str, int] | None = None
    """The question's words' counts among entities (`search.entity_counts`), read with
    the full-text lists' counts (`_full_text`)."""
    _sources: dict[_Key, Hashable | None]
    """Each candidate's source (`_source`) once asked: the fusion asks it often (set
    by `result`, once the lists are found)."""
    _units: dict[_Key, Hashable]
    """Each candidate's piece of evidence (`_unit`) once asked (as `_sources`)."""

    def lap(self, stage: str, found: list[tuple[float, _Key]] | None = None) -> None:
        """End `stage` of the trace, when tracing, with `found`, else what the lists
        added since the last stage."""
        if self.trace is None:
            return
        listed = self.trace.listed if found is None else found
        self.trace.lap(stage, (self._candidate(k, s) for s, k in listed))

    def lap_seeds(self) -> None:
        """End the seeds' stage of the trace, when tracing: the entities the graph starts
        from."""
        if self.trace is None:
            return
        self.trace.lap(
            "seeds",
            (
                TraceCandidate(
                    id=str(e), score=s, label=f"entity {self.seed_names.get(e, ('', ''))[1]}"
                )
                for e, s in self.seeds.items()
            ),
        )

    def lap_context(self) -> None:
        """End the context stage of the trace: the messages next to candidate messages
        (no score of their own: their share is added in the fusion)."""
        if self.trace is None:
            return
        # In the order the candidates were met (a set's order would follow the hash seed).
        neighbours = dict.fromkeys(
            n for pair in self.around.values() for n in pair if n is not None
        )
        self.lap("context", [(0.0, k) for k in neighbours])

    def _candidate(self, key: _Key, score: float) -> TraceCandidate:
        kind, item = key
        fact = self.facts.get(item) if kind == "fact" else None
        label = "message" if fact is None else f"fact {fact.relation}"
        return TraceCandidate(id=str(UUID(hex=item)), score=float(score), label=label)

    def topic_terms(self) -> list[str]:
        """The question's words less the participants' names (all of them when nothing
        else is left): full text looks for what is asked about, not whom."""
        names = {w for name in self.named for w in name.split()}
        return [t for t in self.terms if t not in names] or self.terms

    def out_of_time(self) -> bool:
        if monotonic() > self.deadline:
            self.cut_short = True
        return self.cut_short

    def seed_name(self, entity: UUID) -> str:
        return self.seed_names.get(entity, (str(entity), ""))[0]

    def add_list(self, name: str, found: list[tuple[float, _Key]]) -> None:
        """A ranked list for the fusion: best score first, each item once, `pool` pieces of
        evidence long. What recall would not show takes no place in it; a message and the
        facts learned from it are one piece of evidence (`_unit`). A fact learned from a
        message is a reading of it, not another turn: it never moves a turn or a fact told
        first-hand down the list or out of it (`domain.recall.fusion.placed`), so what a
        list ranks of the turns is what it ranks without extraction."""
        found.sort(key=lambda pair: -pair[0])
        if self.trace is not None:
            self.trace.listed += found
        keys = dict.fromkeys(k for _, k in found)
        self.found.append((name, [k for k in keys if self._shown(k) and self._kept(k)]))

    def _place(self, hand: dict[_Key, bool]) -> list[tuple[str, list[_Key]]]:
        """The lists with the items kept for the fusion (`add_list`), `hand` telling
        whether each item is first-hand."""
        return [
            (name, placed([(k, self._unit(k), hand[k]) for k in keys], self.pool))
            for name, keys in self.found
        ]

    def _first_hand(self, key: _Key, told: States) -> bool:
        """A message, or a fact told (not read out of a message by an extractor: one
        learned from a message by an actor, as `_evidence` counts readings)."""
        if key[0] == "message" or self._source(key) is None:
            return True
        return self._row(key, told)[ACTOR] is None

    def result(self, connection: Connection) -> Recall:
        self._sources, self._units = {}, {}  # the lists are found: their items' are kept
        told = self._told(connection)
        hand = {k: self._first_hand(k, told) for _, keys in self.found for k in keys}
        kept = self._place(hand)
        weights = [self.weights[n] for n, _ in kept]
        self._own = dict(
            weighted_rank_fusion(
                [
                    list(
                        zip(
                            keys,
                            (self._trust(k, told) for k in keys),
                            ranked([hand[k] for k in keys]),
                            strict=True,
                        )
                    )
                    for _, keys in kept
                ],
                weights=weights,
            )
        )
        lists = self._leads(kept, hand)
        fused = self._in_context(
            weighted_rank_fusion(
                counted_once(
                    [
                        [(lead, self._trust(h, told), r, hand[h]) for lead, h, r in led]
                        for _, led in lists
                    ],
                    weights,
                ),
                weights=weights,
            )
        )
        ranks: dict[str, dict[_Key, int]] = {}
        for name, led in lists:  # a name's lists hold different kinds
            ranks.setdefault(name, {}).update({lead: r for lead, _, r in led})
        chosen: list[tuple[_Key, float]] = []
        seen: set[Hashable] = set()
        sources: dict[str, set[Hashable]] = {"fact": set(), "message": set()}
        candidates = [m for lead, _ in fused for m in self._members_of(lead)]
        standing_in, readings = self._evidence(candidates, told)
        fused = self._items(fused, standing_in)
        floor = self.min_score * fused[0][1] if fused else 0.0
        fused = [(k, s) for k, s in fused if s >= floor]
        read: set[Hashable] = set()
        for key, score in fused:
            identity = self._identity(key)
            source = self._source(key)
            if key[0] == "fact" and not shown_by_default(self.facts[key[1]].relation):
                source = None  # co-mentions asked for are shown, whatever else was
            other = "message" if key[0] == "fact" else "fact"
            if identity in seen or (source is not None and source in sources[other]):
                continue
            reading = readings.get(key) if source is not None else None
            if reading is not None and reading in read:
                continue  # one reading of one message is one piece of evidence
            if reading is not None:
                read.add(reading)
            seen.add(identity)
            if source is not None and (key[0] == "message" or key in standing_in):
                sources[key[0]].add(source)
            chosen.append((key, score))
            if len(chosen) == self.size:
                break
        # The hits' facts are among those weighed (`_told`): their rows are read already.
        told.read(connection, [(i, self.facts[i].position) for (k, i), _ in chosen if k == "fact"])
        said = message_rows(connection, [id_of(i) for (kind, i), _ in chosen if kind == "message"])
        hits = [self._hit(key, score, ranks=ranks, told=told, said=said) for key, score in chosen]
        seeds = sorted(self.seeds, key=lambda s: (-self.seeds[s], s))
        if self.trace is not None:
            self.lap("fusion", [(s, k) for k, s in fused])
        return Recall(
            hits=hits,
            cut_short=self.cut_short,
            edge_types=list(self.walked),
            seeds=[self.seed_name(s) for s in seeds],
            trace=None if self.trace is None else self.trace.stages,
        )

    def _told(self, connection: Connection) -> States:
        """The stored rows of the facts in the lists (their confidence and who read them)."""
        facts = {k: None for _, keys in self.found for k in keys if k[0] == "fact"}
        return fact_states(connection, [(i, self.facts[i].position) for _, i in facts])

    def _row(self, key: _Key, told: States) -> tuple[Any, ...]:
        """A fact's state as stored (`readmodels.hit_rows.CONFIDENCE`, ...)."""
        return told.stored(key[1], self.facts[key[1]].position)

    def _leads(
        self, kept: list[tuple[str, list[_Key]]], hand: dict[_Key, bool]
    ) -> list[tuple[str, list[tuple[_Key, _Key, int]]]]:
        """Each list as its pieces of evidence, best first, each as (lead, holder, rank).

        The lead names a piece of evidence in the fusion: the message (when it is a
        candidate) for the message and the facts learned from it, else the first of those
        facts found; `_members` keeps what each lead holds. The holder is what ranks it in
        this list: its message where the list has it (a fact learned from a turn is no
        better evidence of it than the turn's own words), else its first fact there; the
        piece is ranked (`ranked`) where its holder is, first-hand when it holds a
        first-hand item here.
        """
        said: dict[Hashable, _Key] = {
            self._source(("message", m)): ("message", m) for m in self.messages
        }
        first: dict[Hashable, _Key] = {}
        self._members = {}
        self._lead = {}
        lists = []
        for name, keys in kept:
            holders: dict[_Key, _Key] = {}
            told: set[_Key] = set()  # the pieces holding a first-hand item here
            at = {key: i for i, key in enumerate(keys)}
            for key in keys:
                unit = self._unit(key)
                lead = said.get(unit) or first.setdefault(unit, key)
                self._lead[key] = lead
                members = self._members.setdefault(lead, [lead] if lead[0] == "message" else [])
                if key not in members:
                    members.append(key)
                if lead not in holders or key == lead:
                    holders[lead] = key
                if hand[key]:
                    told.add(lead)
            led = sorted(holders.items(), key=lambda pair: at[pair[1]])
            ranks = ranked([lead in told for lead, _ in led])
            lists.append((name, [(lead, h, r) for (lead, h), r in zip(led, ranks, strict=True)]))
        return lists

    def _trust(self, holder: _Key, told: States) -> float:
        """How much a place in a list counts: fully for a message (what was said), a fact's
        confidence as told or extracted for a fact (its fading with time decides whether
        it is shown, `Lens`, and is not weighed twice)."""
        if holder[0] == "message":
            return 1.0
        confidence: float = self._row(holder, told)[CONFIDENCE]
        return min(1.0, confidence)

    def _members_of(self, lead: _Key) -> list[_Key]:
        """The items one piece of evidence holds (`_leads`); a turn found only as a
        neighbour holds itself."""
        return self._members.get(lead, [lead])

    def _in_order(self, lead: _Key, standing_in: set[_Key]) -> list[_Key]:
        """A piece of evidence's items in the order they may be shown (one is): the facts
        that stand in for the message (shown in its place, the best matched first), then
        the message, then its other facts."""
        own = self._own

        def order(key: _Key) -> tuple[bool, bool, float]:
            return key not in standing_in, key[0] != "message", -own.get(key, 0.0)

        return sorted(self._members_of(lead), key=order)

    def _items(
        self, fused: list[tuple[_Key, float]], standing_in: set[_Key]
    ) -> list[tuple[_Key, float]]:
        """The items of the pieces of evidence: the first of each at its score, best first
        (a fact standing in for its message, or the message); then the other facts learned
        from a turn already there, by their own places in the lists (`_apart`). They say
        something else, but of evidence already shown: every turn comes before any comes
        again."""
        first: list[tuple[_Key, float]] = []
        again: list[tuple[_Key, float]] = []
        for lead, score in fused:
            items = self._in_order(lead, standing_in)
            shown = [m for m in items if self._shown(m) and self._kept(m)]
            first += [(m, score) for m in shown[:1]]
            again += [(m, self._apart(m)) for m in shown[1:]]
        last = first[-1][1] if first else 0.0  # scores stay best first
        order = {k: i for i, (k, _) in enumerate(again)}
        again = sorted(again, key=lambda pair: (-pair[1], order[pair[0]]))
        return first + [(k, min(score, last)) for k, score in again]

    def _apart(self, key: _Key) -> float:
        """An item's score by its own places in the lists, boosted as a piece of evidence is."""
        _, _, boost = self.shares
        score = self._own.get(key, 0.0)
        if self._about_named(key):
            score *= 1 + boost
        if self._answers(key):
            score *= 1 + self.relation_boost
        return score

    def _unit(self, key: _Key) -> Hashable:
        """The piece of evidence `key` is: its source message (for a message, or a fact
        shown by default learned from one), else the item itself."""
        try:
            return self._units[key]
        except KeyError:
            pass
        if key[0] == "fact" and not shown_by_default(self.facts[key[1]].relation):
            found: Hashable = key
        else:
            source = self._source(key)
            found = key if source is None else source
        self._units[key] = found
        return found

    def _in_context(self, fused: list[tuple[_Key, float]]) -> list[tuple[_Key, float]]:
        """The fused scores with each message's neighbours' shares added and the named
        participants' items boosted, best first (ties in the fusion's order). A piece of
        evidence is boosted when one of its items is about a named participant, or states
        the relation asked about."""
        before, after, boost = self.shares
        alone = dict(fused)
        scores = in_context(alone, self.around, after=before, before=after)
        for key, score in scores.items():
            if score > alone.get(key, 0.0):
                self.context_why[key] = [
                    f"context: next to a hit (+{score - alone.get(key, 0.0):.4f})"
                ]
        favoured = [k for k in scores if any(map(self._about_named, self._members_of(k)))]
        for key in favoured:
            self.context_why.setdefault(key, []).append("about a participant the question names")
        scores = boosted(scores, favoured, boost)
        answers = {k: a for k in scores for a in self._members_of(k) if self._answers(a)}
        for key, answer in answers.items():
            relation = self.facts[answer[1]].relation
            self.context_why.setdefault(key, []).append(f"the relation asked about ({relation})")
        scores = boosted(scores, answers, self.relation_boost)
        order = {k: i for i, k in enumerate(scores)}
        return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))

    def _answers(self, key: _Key) -> bool:
        """A fact of a relation the question asks about, whose subject it names."""
        if key[0] != "fact" or not self.asked:
            return False
        fact = self.facts[key[1]]
        named = fact.subject_id in self.favoured_subjects or any(
            fact.subject_id == seed.hex for seed in self.seeds
        )
        return named and fact.relation in self.asked

    def _kept(self, key: _Key) -> bool:
        """Whether the `relations` asked for (if any) keep this candidate."""
        if self.relations is None:
            return True
        return key[0] == "fact" and self.facts[key[1]].relation in self.relations

    def _about_named(self, key: _Key) -> bool:
        kind, item = key
        if kind == "message":
            return self.messages[item].speaker in self.named
        return self.facts[item].subject_id in self.favoured_subjects

    def _shown(self, key: _Key) -> bool:
        """Whether recall shows this item: co-mention facts only when asked for."""
        kind, item = key
        return kind == "message" or self.co_mentions or shown_by_default(self.facts[item].relation)

    def _evidence(self, keys: list[_Key], told: States) -> tuple[set[_Key], dict[_Key, Hashable]]:
        """The facts that may take the place of a candidate message they were learned from
        (as good evidence, `domain.recall.evidence.stands_in`, at the moment asked), and
        each fact learned from a message by an actor (an extractor) with that reading: the
        facts one extractor read in one message are shown once, as the message would be."""
        said = {self._source(k) for k in keys if k[0] == "message"} - {None}
        learned = [k for k in keys if k[0] == "fact" and self._source(k) is not None]
        standing_in: set[_Key] = set()
        readings: dict[_Key, Hashable] = {}
        for key in learned:
            f = self._row(key, told)
            source = self._source(key)
            if f[ACTOR] is not None:
                readings[key] = (source, f[ACTOR])
            now = self.confidence_now(f[CONFIDENCE], f[OBSERVED_AT], f[EDGE_TYPE])
            if source in said and stands_in(f[RELATION], now):
                standing_in.add(key)
        return standing_in, readings

    def _source(self, key: _Key) -> Hashable | None:
        """A message and a fact learned from it (same episode and ref, or `message:<id>` for
        a message without a ref, as extraction refers to it) are one piece of evidence.

        Facts sharing a source are not collapsed: each says something else (but one
        extractor's reading of one message is shown once, see `_evidence`).

        Asked of every candidate many times in the fusion, once the lists are found: each
        answer is kept (`_sources`).
        """
        try:
            return self._sources[key]
        except KeyError:
            pass
        kind, item = key
        found: Hashable | None
        if kind == "message":
            m = self.messages[item]
            ref = m.ref if m.ref is not None else f"message:{UUID(hex=m.message_id)}"
            found = ("message", m.conversation, ref)
        else:
            f = self.facts[item]
            found = None if f.ref is None or f.episode is None else ("message", f.episode, f.ref)
        self._sources[key] = found
        return found

    def _identity(self, key: _Key) -> Hashable:
        kind, item = key
        if kind == "message":
            return key
        f = self.facts[item]  # `said`: a value, or a note told apart by its sentence
        return (f.subject_id, f.relation, f.object_id, f.said, f.edge_type)

    def _hit(
        self,
        key: _Key,
        score: float,
        *,
        ranks: dict[str, dict[_Key, int]],
        told: States,
        said: dict[UUID, MessageRow],
    ) -> RecallHit:
        why = []
        lead = self._lead.get(key, key)
        for name, places in ranks.items():
            if lead not in places:
                continue
            held = (key, *self._members_of(lead))
            walked = [self.graph_why[m] for m in held if m in self.graph_why]
            why.append(walked[0] if name == "graph" and walked else f"{name} #{places[lead]}")
        why += self.context_why.get(lead, [])
        if self.window_why and key[0] == "fact":
            why.append(self.window_why)
        kind, stored = key
        item = id_of(stored)
        if kind == "fact":
            position = self.facts[stored].position
            f, raw = told.row(stored, position), told.stored(stored, position)
            return RecallHit(
                kind="fact",
                item_id=item,
                text=f.fact,
                score=score,
                confidence=self.confidence_now(raw[CONFIDENCE], raw[OBSERVED_AT], raw[EDGE_TYPE]),
                why=why,
                provenance=Provenance(
                    episode=f.episode,
                    actor=f.actor,
                    ref=f.ref,
                    recorded_at=f.recorded_at,
                    positions=list(told.positions(stored)),
                ),
                fact=f,
            )
        m = said[item]
        return RecallHit(
            kind="message",
            item_id=item,
            text=m.text,
            score=score,
            confidence=1.0,
            why=why,
            provenance=Provenance(
                episode=m.conversation,
                actor=m.speaker,
                ref=m.ref,
                recorded_at=m.recorded_at,
                positions=[m.position],
            ),
            message=m,
        )
