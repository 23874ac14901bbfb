"""The composition root: the one place a memory's storage and services are built and wired.

`Memory` holds what `compose` returns and passes every call on; each service gets exactly
the collaborators it uses, in its constructor.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from apexmem.config import EVENTS_FILE, READMODELS_FILE
from apexmem.domain.embedding import Embedder
from apexmem.domain.resolution import Disambiguator
from apexmem.domain.settings import Settings
from apexmem.embedders import embedder_for
from apexmem.events.errors import ValidationError
from apexmem.events.log import EventLog
from apexmem.events.ports import Log
from apexmem.extractors import extractor_for
from apexmem.location import DEFAULT_SCHEMA, Location
from apexmem.readmodels import ReadModelStore
from apexmem.replay.leadership import AdvisoryLease, FileLease, Lease
from apexmem.replay.projections import Projections
from apexmem.service.backfill import Backfill, speaker_roles
from apexmem.service.conversation import Conversations
from apexmem.service.eviction import Eviction
from apexmem.service.fact_links import FactLinks
from apexmem.service.fading import Fades
from apexmem.service.linking import NoteLinker
from apexmem.service.logs import get_logger
from apexmem.service.moves import Moves
from apexmem.service.pipeline import Pipeline
from apexmem.service.recall import Recaller
from apexmem.service.refresh import CommunityRefresh
from apexmem.service.resolution import similar_writes
from apexmem.service.rpe import Gate
from apexmem.service.similarity import Similarity
from apexmem.service.upkeep import Communities
from apexmem.service.usage import Usage
from apexmem.service.writer import Writer
from apexmem.timetravel import replayed_at

if TYPE_CHECKING:
    from apexmem.events.postgres_log import PostgresLog

__all__ = ["Services", "checked_clock", "compose", "default_clock", "open_log"]

_logger = get_logger()


class Services:
    """A memory's storage, projections and application services, wired together."""

    def __init__(
        self,
        *,
        log: Log,
        store: ReadModelStore,
        projections: Projections,
        similarity: Similarity | None,
        pipeline: Pipeline,
        writer: Writer,
        settings: Settings,
        clock: Callable[[], datetime],
        lease: Callable[[], Lease],
    ) -> None:
        self.log = log
        self.lease = lease
        """A new lease on leading the projection followers of this memory."""
        self.store = store
        self.projections = projections
        self.similarity = similarity
        """The vector side (None when `[memory.vectors] enabled = false`)."""
        self.pipeline = pipeline
        self.writer = writer
        ready = projections.ready
        self.recaller = Recaller(store, similarity, settings, clock)
        self.usage = Usage(
            pipeline, log=log, store=store, settings=settings, clock=clock, ready=ready
        )
        self.communities = Communities(pipeline, store=store, settings=settings, ready=ready)
        self.refresh = CommunityRefresh(
            self.communities, store=store, interval=settings.memory.graph.community_refresh_interval
        )
        pipeline.declare(self.refresh)
        self.eviction = Eviction(
            pipeline, log=log, store=store, settings=settings, clock=clock, ready=ready
        )
        self.fades = Fades(
            pipeline, log=log, store=store, settings=settings, clock=clock, ready=ready
        )
        self.links = FactLinks(pipeline, log=log, store=store, ready=ready)
        self.linker = NoteLinker(
            pipeline,
            writer,
            log=log,
            store=store,
            settings=settings,
            similarity=similarity,
            ready=ready,
        )
        if settings.memory.graph.note_linking.enabled:
            pipeline.declare(self.linker)
        graph = settings.memory.graph
        roles = speaker_roles(graph.user_entity, graph.assistant_entity)
        gate = None
        if graph.rpe.enabled and projections.embedder is not None:
            gate = Gate(graph.rpe, projections.embedder, store)
        self.backfill = Backfill(pipeline, writer, store=store, ready=ready, roles=roles, gate=gate)
        self.backfill.extractor = extractor_for(graph)
        self.conversations = Conversations(writer, self.backfill, store=store)


def compose(
    location: Location,
    *,
    settings: Settings,
    clock: Callable[[], datetime],
    read_only: str | None,
    embedder: Embedder | None = None,
    disambiguator: Disambiguator | None = None,
) -> Services:
    """Open the log and read models at `location` and build every service over them.

    `embedder` replaces the one `[memory.vectors] embedder` names; `read_only` (why writes
    are refused, or None) goes to the pipeline.
    """
    log, store, lease = _storage(location, settings=settings, clock=clock)
    if store.set_aside is not None:
        kept, error = store.set_aside
        _logger.warning("readmodels.damaged", kept=str(kept), error=error, rebuilding=True)
    if store.relaid_from is not None:
        _logger.warning("readmodels.relaid", layout=store.relaid_from, rebuilding=True)
    vectors = settings.memory.vectors
    chosen = None
    if vectors.enabled:
        chosen = embedder if embedder is not None else embedder_for(vectors)
    projections = Projections(log, store, settings, embedder=chosen, on_discarded=_discarded)
    if projections.reprojected is not None:  # a log restored from a copy, emptied, replaced
        _logger.warning("readmodels.other_log", reason=projections.reprojected, rebuilding=True)
    similarity = Similarity(projections) if vectors.enabled else None
    pipeline = Pipeline(
        log,
        retries=settings.memory.log.write_retries,
        project=projections.ready,
        read_only=read_only,
    )
    writer = Writer(
        pipeline,
        log,
        settings,
        clock,
        moves=Moves(log, store),
        similar=similar_writes(settings.memory.graph, similarity, log, store, disambiguator),
    )
    return Services(
        log=log,
        store=store,
        projections=projections,
        similarity=similarity,
        pipeline=pipeline,
        writer=writer,
        settings=settings,
        clock=clock,
        lease=lease,
    )


def open_log(
    location: Location,
    *,
    settings: Settings,
    clock: Callable[[], datetime] | None = None,
    create: bool = True,
) -> EventLog | PostgresLog:
    """The log at `location` alone (made if absent and `create`), for copying it."""
    if location.url is None:
        return EventLog(
            location.directory / EVENTS_FILE, synchronous=settings.memory.log.synchronous,
            clock=clock,
        )  # fmt: skip
    from apexmem.events.postgres_log import PostgresLog

    schema = location.schema or DEFAULT_SCHEMA
    return PostgresLog(location.url, schema=schema, clock=clock, create=create)


def _storage(
    location: Location, *, settings: Settings, clock: Callable[[], datetime]
) -> tuple[Log, ReadModelStore, Callable[[], Lease]]:
    """The log, the read-model store and the projection lease of `location`'s backend."""
    log = open_log(location, settings=settings, clock=clock)
    if location.url is None:
        directory = location.directory
        return log, ReadModelStore(directory / READMODELS_FILE), lambda: FileLease(directory)
    from apexmem.events.postgres import Server

    url, schema = location.url, location.schema or DEFAULT_SCHEMA
    store = ReadModelStore(url, schema=schema, cache=location.directory)
    server = Server(url)
    return log, store, lambda: AdvisoryLease(lambda: server.connect(autocommit=True), schema=schema)


def _discarded(path: Path, reason: str) -> None:
    _logger.warning("vectors.index_damaged", path=str(path), error=reason, rebuilding=True)


def checked_clock(clock: Callable[[], datetime]) -> Callable[[], datetime]:
    """`clock`, refusing a reading without a timezone (every stored time is UTC) at the call
    that reads it, before anything is decided or written."""

    def read() -> datetime:
        now = clock()
        if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
            raise ValidationError("clock", now, "is not a datetime with a timezone")
        return now

    return read


def default_clock(directory: Path) -> Callable[[], datetime]:
    """The wall clock, or for a replayed directory the moment it shows (which decay is
    measured at: a replay answers as the memory did then)."""
    moment = replayed_at(directory)
    if moment is None:
        return lambda: datetime.now(UTC)
    return lambda: moment
