"""The Memory facade: writes, queries on both time axes, time travel and audit, one directory."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, cast
from uuid import UUID

from apexmem import damage
from apexmem.composition import checked_clock, compose, default_clock
from apexmem.config import holds_memory, home, load_settings
from apexmem.domain.commands import (
    AddAlias,
    AssertFact,
    Command,
    MapRelation,
    MergeEntities,
    ObserveEntity,
    RecordMessage,
    RetractFact,
    SetDecayRate,
    build,
    validated,
)
from apexmem.domain.embedding import Embedder
from apexmem.domain.extraction import Extractor
from apexmem.domain.resolution import Disambiguator
from apexmem.domain.settings import Settings
from apexmem.domain.summaries import Summarizer
from apexmem.events.envelope import RecordedEvent
from apexmem.events.errors import DiskFullError, NotFoundError, ValidationError
from apexmem.events.log import EventLog
from apexmem.events.ports import Log
from apexmem.location import Location
from apexmem.readmodels import CommunityRow, graph_stats
from apexmem.readmodels.decay import fading_at
from apexmem.replay.audit import HistoryEntry
from apexmem.replay.diff import Diff, diff
from apexmem.replay.runner import CatchUp, Progress
from apexmem.replay.snapshot import FactView, Snapshot, snapshot
from apexmem.replay.verify import Head, VerifyReport, head, parse_head, verify
from apexmem.service import audit
from apexmem.service.arguments import REQUIRED, fact_commands, given, in_batch
from apexmem.service.backfill import BackfillReport
from apexmem.service.conversation import AddedMessages
from apexmem.service.erasure_cleanup import clean_up
from apexmem.service.eviction import EvictionReport
from apexmem.service.fact_links import FactGraph, FactLink
from apexmem.service.fading import FadePass
from apexmem.service.forgetting import ForgetReport, Forgetting
from apexmem.service.linking import Linking
from apexmem.service.logs import get_logger
from apexmem.service.merging import MergeRow, merges_in
from apexmem.service.recalled import Recall, RecallHit, format_context
from apexmem.service.results import (
    AliasRef,
    EntityRef,
    FactRef,
    MemoryStats,
    MergeRef,
    MessageRef,
    PolicyRef,
    Result,
    RetractRef,
)
from apexmem.service.status import Status, status_of
from apexmem.service.upkeep import Assignment, Detection
from apexmem.service.usage import UsageDecay
from apexmem.service.view import TimeArg, View, as_time
from apexmem.timetravel import copy_until, known_at_position, read_only_reason

__all__ = ["Memory"]

R = TypeVar("R")

_logger = get_logger()


class Memory(View):
    """A temporal knowledge-graph memory stored in one directory; open with `Memory.open`.

    Its queries are those of a `View` of now (see `as_of` for the past).
    """

    def __init__(
        self,
        location: Location,
        *,
        settings: Settings,
        clock: Callable[[], datetime],
        embedder: Embedder | None = None,
        disambiguator: Disambiguator | None = None,
    ) -> None:
        self.location = location
        """Where the memory lives: its directory, or its PostgreSQL database and schema."""
        self.directory = location.directory
        """Its SQLite files; on PostgreSQL, this machine's cache (the FAISS index file)."""
        self.settings = settings
        self.clock = clock
        self.read_only = read_only_reason(location.directory)
        """Why writes are refused (a replayed directory), or None."""
        services = compose(
            location,
            settings=settings,
            clock=clock,
            read_only=self.read_only,
            embedder=embedder,
            disambiguator=disambiguator,
        )
        self.log = services.log
        self.store = services.store
        self.projections = services.projections
        self.similarity = services.similarity
        """The vector side (None when `[memory.vectors] enabled = false`)."""
        self._services = services
        self.lease = services.lease
        """A new lease on leading this memory's projection followers (`project --follow`)."""
        self._pipeline = services.pipeline
        self._writer = services.writer
        damaged = damage.found(self.directory, self.log)
        if damaged is not None:
            self.read_only = self._pipeline.read_only = damaged
        self._recaller = services.recaller
        self._forgetting = Forgetting(
            self.log,
            self._pipeline,
            self.store,
            clean_up=lambda: clean_up(self.log, self.projections),
            before=services.conversations.extract_pending,
        )
        if self.read_only is None and self._forgetting.pending():
            self._forgetting.finish()  # a forget stopped before its clean-up: finish it
        super().__init__(
            self.store,
            ready=self._ready,
            ontology=self._writer.ontology,
            history_limit=settings.memory.graph.edge_history_limit,
            clock=clock,
            default_decay_rate=settings.memory.graph.default_decay_rate,
            recaller=self._recaller,
            similarity=self.similarity,
        )

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | Location | None = None,
        *,
        settings: Settings | None = None,
        clock: Callable[[], datetime] | None = None,
        embedder: Embedder | None = None,
        disambiguator: Disambiguator | None = None,
        create: bool = True,
    ) -> Memory:
        """Open (creating if absent) the memory in `path`, `$APEXMEM_HOME` or `~/.apexmem`.

        `path` is a directory or a PostgreSQL URL (`postgresql://user@host/db`, with
        `?schema=NAME` to pick the schema; see `apexmem.location`).
        With `create=False` a place that holds no memory yet (no log) is refused with
        NotFoundError and nothing is created: for callers that only mean to read.

        `embedder` replaces the one `[memory.vectors] embedder` names (WordLlama by default).
        `disambiguator` judges names in the ambiguous band of `use_embedding_resolution`
        (default: keep them apart, the pair recorded).
        """
        location = home(path)
        if not create and not holds_memory(location):
            raise NotFoundError(f"no memory in {location} (no log there)")
        directory = location.directory
        directory.mkdir(parents=True, exist_ok=True)
        chosen = settings if settings is not None else load_settings(directory)
        memory = cls(
            location,
            settings=chosen,
            clock=checked_clock(clock) if clock is not None else default_clock(directory),
            embedder=embedder,
            disambiguator=disambiguator,
        )
        _logger.debug("memory.opened", location=str(location))
        return memory

    def close(self) -> None:
        """Record pending usage, save the vector index if it moved, close every connection."""
        self._services.conversations.close()  # the background extraction stops first
        self._services.refresh.close()  # then the community detection it may have started
        self._pipeline.flush_usage()
        if self.similarity is not None:
            self.similarity.close()
        self.log.close()
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # Writes ------------------------------------------------------------------------------

    def execute(
        self, commands: Sequence[Command], *, idempotency_key: str | None = None
    ) -> list[Result]:
        """Apply any mix of commands as one atomic append; one result per command.

        Commands made by their constructors are validated first, as the fields given to
        `assert_fact` are: a ValidationError names the field (`[index].field` for more than
        one command), the value and the rule, and nothing is written.
        """
        return self._write(validated(commands), idempotency_key)

    def _write(
        self, commands: Sequence[Command], idempotency_key: str | None = None
    ) -> list[Result]:
        """`execute` for commands this facade built itself (already validated)."""
        return self._writer.execute(commands, idempotency_key=idempotency_key)

    def _command(
        self,
        kind: type[Command],
        fields: Mapping[str, Any],
        result: type[R],
        idempotency_key: str | None = None,
    ) -> R:
        """One command built from `fields` (validated, named by field) and its result."""
        [done] = self._write([build(kind, fields)], idempotency_key)
        assert isinstance(done, result)
        return done

    def assert_fact(
        self,
        *,
        subject: str = REQUIRED,
        relation: str = REQUIRED,
        object: str | None = None,
        subject_type: str = "concept",
        object_type: str = "concept",
        value: str | None = None,
        edge_type: str = "semantic",
        fact: str | None = None,
        confidence: float = 1.0,
        valid_from: datetime | str | None = None,
        valid_until: datetime | str | None = None,
        observed_at: datetime | str | None = None,
        episode: str | None = None,
        actor: str | None = None,
        ref: str | None = None,
        idempotency_key: str | None = None,
        **unknown: Any,
    ) -> FactRef:
        """Assert one fact (see AssertFact for the fields); returns what became of it.

        `object` names another entity; `value` is a literal instead; neither makes a note
        about the subject (`fact` is then its sentence). Unknown fields are refused by name.
        """
        fields = given(locals(), unknown, Memory.assert_fact.__kwdefaults__)
        return self._command(AssertFact, fields, FactRef, idempotency_key)

    def assert_facts(
        self, facts: Iterable[Mapping[str, Any] | AssertFact], *, idempotency_key: str | None = None
    ) -> list[FactRef]:
        """Assert many facts in one atomic append; one result per fact, in order.

        Each fact is a mapping of AssertFact's fields or an AssertFact (validated the same).
        """
        commands = fact_commands(facts)
        try:
            results = self._write(commands, idempotency_key)
        except ValidationError as e:
            named = in_batch("facts", e, len(commands))
            if named is e:
                raise
            raise named from e
        return [r for r in results if isinstance(r, FactRef)]

    def observe_entity(
        self,
        *,
        name: str = REQUIRED,
        entity_type: str = "concept",
        summary: str | None = None,
        episode: str | None = None,
        actor: str | None = None,
        **unknown: Any,
    ) -> EntityRef:
        """Make sure an entity exists (optionally with a new summary)."""
        fields = given(locals(), unknown, Memory.observe_entity.__kwdefaults__)
        return self._command(ObserveEntity, fields, EntityRef)

    def add_alias(
        self,
        *,
        entity: str = REQUIRED,
        alias: str = REQUIRED,
        entity_type: str = "concept",
        episode: str | None = None,
        actor: str | None = None,
        **unknown: Any,
    ) -> AliasRef:
        """Claim another name for an entity of the same type; the first claim wins."""
        fields = given(locals(), unknown, Memory.add_alias.__kwdefaults__)
        return self._command(AddAlias, fields, AliasRef)

    def retract(
        self,
        fact_id: UUID | str,
        *,
        valid_until: datetime | None = None,
        reason: str = "retracted",
        actor: str | None = None,
    ) -> RetractRef:
        """End a fact version at `valid_until`, or withdraw it as never true when omitted."""
        fields = {
            "fact_id": str(fact_id),
            "valid_until": valid_until,
            "reason": reason,
            "actor": actor,
        }
        return self._command(RetractFact, fields, RetractRef)

    def add_messages(
        self,
        *,
        episode: str = REQUIRED,
        messages: Sequence[Mapping[str, Any]] = REQUIRED,
        extract: bool = True,
        idempotency_key: str | None = None,
    ) -> AddedMessages:
        """Append a conversation's messages (`speaker`/`role`, `text`/`content`, optional
        `at`, `ref`) to `episode` in one atomic write; with `extract`, the extractor reads
        them in the background (`extract_pending` waits for it). A retry with the same
        `idempotency_key` writes nothing again. See `service.conversation`."""
        missing = [n for n, v in (("episode", episode), ("messages", messages)) if v is REQUIRED]
        if missing:
            raise ValidationError(missing[0], None, "is required")
        return self._services.conversations.add_messages(
            episode, messages, extract=extract, idempotency_key=idempotency_key
        )

    def extract_pending(self) -> BackfillReport:
        """Extract every message no extractor has read yet, and return what was found."""
        return self._services.conversations.extract_pending()

    def record_message(
        self,
        *,
        episode: str | None = None,
        speaker: str = REQUIRED,
        text: str = REQUIRED,
        at: datetime | str | None = None,
        ref: str | None = None,
        actor: str | None = None,
        **unknown: Any,
    ) -> MessageRef:
        """Store one message of a conversation (`episode`) verbatim."""
        fields = given(locals(), unknown, Memory.record_message.__kwdefaults__)
        return self._command(RecordMessage, fields, MessageRef)

    def forget(
        self,
        *,
        entity: str | None = None,
        entity_type: str | None = None,
        episode: str | None = None,
        reason: str | None = None,
        actor: str | None = None,
    ) -> ForgetReport:
        """Erase an entity (its names, facts, the messages that mention it) or a
        conversation (`episode`) from every view and every file; the chain still verifies
        and the erasure is an event (docs/explanation/erasure.md). `reason` is required.

        Messages still waiting for extraction are extracted first: what is read out of
        them then falls under the erasure, instead of being extracted after it."""
        return self._forgetting.forget(
            entity=entity,
            entity_type=entity_type,
            episode=episode,
            reason=reason,
            actor=actor,
        )

    def merge(
        self,
        *,
        source: str = REQUIRED,
        target: str = REQUIRED,
        entity_type: str = "concept",
        reason: str | None = None,
        episode: str | None = None,
        actor: str | None = None,
        **unknown: Any,
    ) -> MergeRef:
        """Merge an entity forward into another of the same type; its names keep resolving."""
        fields = given(locals(), unknown, Memory.merge.__kwdefaults__)
        return self._command(MergeEntities, fields, MergeRef)

    def set_decay_rate(self, edge_type: str, rate: float, *, actor: str | None = None) -> PolicyRef:
        """Set the confidence decay rate (per day) of one edge type."""
        fields = {"edge_type": edge_type, "rate": rate, "actor": actor}
        return self._command(SetDecayRate, fields, PolicyRef)

    def map_relation(
        self,
        *,
        canonical: str = REQUIRED,
        aliases: Sequence[str] = (),
        cardinality: str = "many",
        episode: str | None = None,
        actor: str | None = None,
        **unknown: Any,
    ) -> PolicyRef:
        """Teach the ontology a canonical relation, its aliases and cardinality."""
        fields = given(locals(), unknown, Memory.map_relation.__kwdefaults__)
        if isinstance(fields.get("aliases"), tuple):
            fields["aliases"] = list(aliases)
        return self._command(MapRelation, fields, PolicyRef)

    # Upkeep ------------------------------------------------------------------------------

    @property
    def summarizer(self) -> Summarizer:
        """Writes the summary of each new or changed community; replace it
        (`mem.summarizer = MySummarizer()`) to use a model. Its verdicts are recorded."""
        return self._services.communities.summarizer

    @summarizer.setter
    def summarizer(self, summarizer: Summarizer) -> None:
        self._services.communities.summarizer = summarizer

    @property
    def extractor(self) -> Extractor:
        """Reads messages for `backfill`; replace it (`mem.extractor = ...`) to use a model.
        Its verdicts are recorded."""
        return self._services.backfill.extractor

    @extractor.setter
    def extractor(self, extractor: Extractor) -> None:
        self._services.backfill.extractor = extractor

    def backfill(
        self,
        limit: int | None = None,
        extractor: Extractor | None = None,
        *,
        progress: Progress | None = None,
    ) -> BackfillReport:
        """Extract entities and facts from up to `limit` messages not yet read, oldest
        first, with `extractor` (else `self.extractor`); see `service.backfill.Backfill`."""
        return self._services.backfill.backfill(limit, extractor, progress=progress)

    def link_notes(self, *, actor: str | None = None) -> Linking:
        """Link each entity first seen since the last pass to its similar entities
        (A-MEM note linking; `[memory.graph.note_linking]`, needs vectors)."""
        return self._services.linker.link_notes(actor=actor)

    def decay_usage(self, *, force: bool = False, actor: str | None = None) -> UsageDecay:
        """Decay the retrieval counts of facts not retrieved within the interval (A-MEM);
        at most once per `link_weight_decay_interval_secs` unless `force`."""
        return self._services.usage.decay_usage(force=force, actor=actor)

    def record_fades(self, *, actor: str | None = None) -> FadePass:
        """One decay pass: record, as one event, the believed facts whose decayed confidence
        went under the recall threshold since the previous pass and those lifted back above
        it, with the rate that applied (nothing is written when none crossed)."""
        return self._services.fades.record_fades(actor=actor)

    def link(
        self,
        source: UUID | str,
        target: UUID | str,
        link_type: str,
        strength: float = 1.0,
        *,
        actor: str | None = None,
    ) -> FactLink:
        """Link two fact versions (seed 004): `source` supersedes, is caused by, is part of,
        relates to or depends on `target` (`link_type` in any case), `strength` in (0, 1].

        Facts are named by id or by the short ids the CLI prints. One `fact-linked.v1` is
        appended; the same link told again with the same strength writes nothing. Recall
        brings a hit's linked facts, weighted by type (caused_by 1.5 ... part_of 0.7).
        """
        return self._services.links.link(
            self._fact_id("source", source),
            self._fact_id("target", target),
            link_type,
            strength,
            actor=actor,
        )

    def fact_graph(
        self, fact: UUID | str, depth: int = 1, *, known_at: TimeArg = None
    ) -> FactGraph:
        """The links from and to `fact`, `depth` (1 to 3) hops out, and the facts they
        reach, as the memory knew them at `known_at` (now when None)."""
        return self._services.links.fact_graph(
            self._fact_id("fact", fact), depth, known_at=as_time("known_at", known_at)
        )

    def _fact_id(self, field: str, given: UUID | str) -> UUID | str:
        """A fact id, or the fact a short id (`f91955cd:3`, a unique prefix) names."""
        from apexmem.cli.ids import resolve_fact

        if not isinstance(given, str):
            return given
        # mypy checks this file as `api.memory` and the resolver's Memory as `apexmem.memory`.
        return resolve_fact(cast("Any", self), given, field)

    def retrieval_counts(self, fact_ids: Iterable[UUID | str]) -> dict[UUID, float]:
        """How often recalls returned each of these fact versions, after the decay passes
        (facts never returned are left out). Usage held for a batch is recorded first."""
        return self._services.usage.retrieval_counts(fact_ids)

    def evict(self, *, dry_run: bool = False, actor: str | None = None) -> EvictionReport:
        """Archive what the seeds' eviction removes, as events; `dry_run` only lists it
        (`[memory.graph] expired_edge_retention_days` and `max_entities` decide)."""
        return self._services.eviction.evict(dry_run=dry_run, actor=actor)

    def detect_communities(
        self, *, summarizer: Summarizer | None = None, actor: str | None = None
    ) -> Detection:
        """Label propagation over the active edges; record what changed (new or changed
        communities summarized by `summarizer`, else `self.summarizer`)."""
        return self._services.communities.detect_communities(summarizer=summarizer, actor=actor)

    def assign_communities(self, *, actor: str | None = None) -> Assignment:
        """Place entities that belong to no community by their neighbours' votes."""
        return self._services.communities.assign_communities(actor=actor)

    def communities(self, *, limit: int = 50, top: int = 5) -> list[CommunityRow]:
        """Live communities, largest first: name, recorded summary, size, best-connected
        members (at most `limit` communities, `top` members each)."""
        return self._services.communities.communities(limit=limit, top=top)

    def decay_rates(self, *, known_at: TimeArg = None) -> dict[str, float]:
        """The confidence decay rate (per day) of every edge type, as known at `known_at`
        (now when None): the latest `set_decay_rate`, else `default_decay_rate`."""
        return self._services.communities.decay_rates(known_at=known_at)

    def merges(self, *, apart: bool = False, limit: int = 100) -> list[MergeRow]:
        """Entities merged into others, oldest first, with the similarity verdict if any.

        With `apart`, also the ambiguous pairs resolution by similarity kept apart
        (`use_embedding_resolution`), so a person can merge them by hand.
        """
        self._ready()
        return merges_in(self.store, apart=apart, limit=limit)

    # Queries -----------------------------------------------------------------------------

    def as_of(
        self, *, known_at: TimeArg = None, valid_at: TimeArg = None, position: int | None = None
    ) -> View:
        """A read-only view: what the store had been told by `known_at` (or by log
        `position`: up to that position's append), true at `valid_at` (None: current then)."""
        if position is not None:
            if known_at is not None:
                raise ValidationError("position", position, "is given with known_at: give one")
            known_at = known_at_position(self.log, position)
        return View(
            self.store,
            ready=self._ready,
            ontology=self._writer.ontology,
            known_at=known_at,
            valid_at=valid_at,
            history_limit=self._history_limit,
            clock=self.clock,
            default_decay_rate=self.settings.memory.graph.default_decay_rate,
            recaller=self._recaller,
            similarity=self.similarity,
        )

    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        max_hops: int | None = None,
        edge_types: Sequence[str] | None = None,
        mode: str | None = None,
        valid_at: TimeArg = None,
        known_at: TimeArg = None,
        include_faded: bool = False,
        include_co_mentions: bool = False,
        relations: Sequence[str] | None = None,
        min_score: float | None = None,
        window: tuple[TimeArg, TimeArg] | None = None,
        reference_time: TimeArg = None,
        position: int | None = None,
        trace: bool = False,
    ) -> Recall:
        """The facts and messages that best answer `query`, best first, each with why and whence.

        Full text, vectors and a graph expansion from the entities the query names (`mode`
        "bfs" or "activation", `max_hops` deep) are fused by reciprocal rank fusion.
        `edge_types` restricts every fact returned (None: the keyword router picks the
        types the expansion walks; []: all). `valid_at` / `known_at` (or log `position`)
        recall inside a past state; without `valid_at`, facts current then. Defaults come
        from `[memory.graph]`: recall_limit, max_hops (for the BFS;
        spreading_activation.max_hops for the activation), and spreading_activation.enabled
        for the mode. Each recall records which facts it
        returned (one usage event; `[memory.recall] record_usage`). Faded facts (confidence
        decayed under 0.1 by `known_at`, else now) are left out unless `include_faded`;
        co-mention facts (`mentioned_with`) unless `include_co_mentions`. `relations` keeps
        only facts of those relations (mapped by the ontology; one neither it nor any fact
        knows is a ValidationError); hits under `min_score` x the best hit's score are left
        out (default `[memory.recall] min_score`). A time the question names ("in 2019",
        "last summer" counted from `reference_time`, else now; "before she moved": when the
        memory says she did), or `window=(start, end)`, is the valid time its facts are
        recalled over (those valid at some time in it) when `valid_at` is not given; `why`
        shows it. `trace=True` fills the result's `trace`: each stage's best candidates,
        scores and milliseconds (`service.trace`).
        """
        found = self.as_of(valid_at=valid_at, known_at=known_at, position=position).recall(
            query,
            limit=limit,
            max_hops=max_hops,
            edge_types=edge_types,
            mode=mode,
            include_faded=include_faded,
            include_co_mentions=include_co_mentions,
            relations=relations,
            min_score=min_score,
            window=window,
            reference_time=reference_time,
            trace=trace,
        )
        self._note_usage(found)
        return found

    @staticmethod
    def format_context(hits: Recall | list[RecallHit], *, budget_chars: int = 2_000) -> str:
        """Recalled hits as `- <text> (confidence: 0.95)` lines within `budget_chars`."""
        return format_context(hits, budget_chars=budget_chars)

    def _note_usage(self, found: Recall) -> None:
        recall = self.settings.memory.recall
        fact_ids = [h.item_id for h in found if h.kind == "fact"]
        if recall.record_usage:
            self._pipeline.note_usage(fact_ids, batch=recall.usage_batch)

    def stats(self) -> MemoryStats:
        """Counts of entities, fact versions, current, faded and archived facts, and events;
        sizes on disk."""
        self._ready()
        with self.store.read() as connection:
            fading = fading_at(
                connection,
                now=self.clock(),
                known_at=None,
                default=self.settings.memory.graph.default_decay_rate,
            )
            graph = graph_stats(connection, fading=fading, now=fading.at)  # current now
        last = self.log.last_position()
        return MemoryStats(
            events=self.log.count(),
            last_position=last,
            log_bytes=_log_bytes(self.log),
            readmodel_bytes=_bytes(self.store.path),
            projection_lag=max(0, last - graph.position),
            graph=graph,
        )

    def status(self) -> Status:
        """Counts, each projection's lag behind the log, the settings that shape recall,
        and versions; never data (no fact text, no names, no token)."""
        self._ready()
        return status_of(self.log, self.store, self.settings, self.similarity, self.clock())

    # Projection and time travel ----------------------------------------------------------

    def project(self, *, progress: Progress | None = None) -> CatchUp:
        """Apply every event the read models have not seen yet (exactly once)."""
        return self.projections.catch_up(progress=progress)

    def rebuild(self, *, progress: Progress | None = None) -> CatchUp:
        """Drop the read models and project the whole log again (deterministic)."""
        self.projections.drop()
        _logger.info("readmodels.dropped", directory=str(self.directory))
        return self.projections.catch_up(progress=progress)

    def replay(
        self,
        *,
        until: TimeArg | int,
        into: str | os.PathLike[str],
        progress: Progress | None = None,
    ) -> Memory:
        """Fold the log up to `until` (a time or a position) into a new, read-only memory.

        `into` must not exist or be empty. The new directory holds the log up to that point
        (it verifies and answers history) and fresh read models projected from it.
        """
        moment = until if isinstance(until, int) else _required(until)
        position = moment if isinstance(moment, int) else self.log.position_at(moment)
        if not 0 <= position <= self.log.last_position():
            raise ValidationError(
                "until", until, f"is not a position of this log (0..{self.log.last_position()})"
            )
        target = copy_until(self.log, self.location, Path(into), position=position, until=moment)
        embedder = self.similarity.embedder if self.similarity is not None else None
        replayed = Memory.open(target, settings=self.settings, embedder=embedder)
        replayed.projections.catch_up(progress=progress)
        return replayed

    def diff(self, since: TimeArg, until: TimeArg) -> Diff:
        """Facts asserted, superseded, retracted, faded and restored, and links told
        between facts (`Diff.linked`), after `since` and up to `until`."""
        start, end = _required(since, "since"), _required(until, "until")
        if end < start:
            raise ValidationError(
                "until", end.isoformat(), f"is before since ({start.isoformat()})"
            )
        self._ready()
        with self.store.read() as connection:
            return diff(self.log, connection, start, end)

    def _ready(self) -> None:
        try:
            self.projections.ready(behind=self._behind)
        except DiskFullError as e:
            self._behind(e)

    def _behind(self, e: DiskFullError) -> None:
        # A read needs no space: it answers from the read models as far as they were
        # projected, and they catch up once there is room again.
        if lag := self.projections.lag():
            _logger.warning("readmodels.behind", lag=lag, error=str(e))

    # Audit -------------------------------------------------------------------------------

    def history(
        self,
        *,
        fact: UUID | str | None = None,
        entity: str | None = None,
        entity_type: str | None = None,
        slot: UUID | str | None = None,
    ) -> list[HistoryEntry]:
        """Every event of a fact's slot, a slot, or an entity, oldest first, with provenance.

        An entity's history holds its own stream, the names it claimed and every slot it is
        the subject or the object of (merged entities included). Archived (evicted) entities
        keep their history, archive events included.
        """
        return audit.history(
            self.log,
            self.store,
            ready=self._ready,
            fact=fact,
            entity=entity,
            entity_type=entity_type,
            slot=slot,
        )

    def events(
        self, *, start: int = 1, stop: int | None = None, tags: Sequence[str] = ()
    ) -> Iterator[RecordedEvent]:
        """Events of the log in position order, optionally by tag."""
        return self.log.read(start=start, stop=stop, tags=tags)

    def snapshot(self, *, until: int | None = None) -> Snapshot:
        """Names and every fact version folded from the log (a full replay; O(log))."""
        return snapshot(self.log, until=until)

    def current_facts(self) -> list[FactView]:
        """Facts believed now, valid at the clock's time (open-ended, or ending later), by a
        full replay of the log."""
        return self.snapshot().current(at=self.clock())

    def verify(self, *, expect: str | None = None) -> VerifyReport:
        """Recompute the hash chain: ok, events checked, and the first bad position if any.

        `expect` is a kept head (`POSITION:HEX`, or `HEX` for the end; see `head`) the
        chain must hold. A bad position makes the memory refuse writes (`apexmem.damage`).
        """
        report = verify(self.log, expect=None if expect is None else parse_head(expect))
        refused = damage.noted(self.directory, report)
        if refused is not None:
            self.read_only = self._pipeline.read_only = refused
        return report

    def head(self) -> Head:
        """The log's last position and chain hash: keep it elsewhere, check with verify."""
        return head(self.log)


def _required(value: TimeArg, field: str = "until") -> datetime:
    when = as_time(field, value)
    if when is None:
        raise ValidationError(field, value, "is required")
    return when


def _log_bytes(log: Log) -> int:
    """The log's size where it is stored: its file, or its tables on the database server."""
    if isinstance(log, EventLog):
        return _bytes(log.path)
    from apexmem.events.postgres_log import PostgresLog

    return log.bytes_used() if isinstance(log, PostgresLog) else 0


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
