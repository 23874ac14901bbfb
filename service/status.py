"""A memory's status: counts, how far each projection is behind the log, the settings that
shape recall, and versions. Never data: no fact text, no names, no token, no address."""

from __future__ import annotations

import platform
import sqlite3
from datetime import datetime
from importlib import metadata
from typing import Literal

import msgspec
from sqlalchemy import Connection, func, select

from apexmem.domain.settings import Settings
from apexmem.events.ports import Log
from apexmem.readmodels import ReadModels
from apexmem.readmodels.decay import fading_at
from apexmem.readmodels.stats import graph_stats
from apexmem.readmodels.store import tracked_position
from apexmem.readmodels.tables import LAYOUT, communities, fact_links
from apexmem.readmodels.vectors import VECTORS
from apexmem.service.similarity import Similarity

__all__ = ["Counts", "Lags", "Status", "StatusSettings", "Versions", "status_of"]

Backend = Literal["sqlite", "postgresql"]


class Counts(msgspec.Struct, frozen=True, kw_only=True):
    """How many of each thing the memory holds (the read models at their position)."""

    events: int
    """Events in the log."""
    entities: int
    aliases: int
    facts_believed: int
    """Current facts: believed and valid now."""
    facts_faded: int
    """Believed facts whose decayed confidence fell under 0.1 (left out of recall)."""
    fact_versions: int
    episodes: int
    messages: int
    messages_unextracted: int
    """Messages no extractor has read yet."""
    fact_links: int
    communities: int


class Lags(msgspec.Struct, frozen=True, kw_only=True):
    """How many log positions each projection is behind the log's head (0: up to date)."""

    head: int
    """The log's last position."""
    graph: int
    full_text: int
    """Written in the graph's transaction: always the graph's lag."""
    vectors: int | None
    """None when vectors are off (`[memory.vectors] enabled = false`)."""
    communities: int | None
    """Positions since the last community detection formed one (None: none formed yet)."""


class StatusSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The settings that decide what recall returns and how beliefs fade."""

    backend: Backend
    embedder: str | None
    """The embedding model's name (None: vectors off)."""
    recall_limit: int
    recall_mode: Literal["bfs", "activation"]
    max_hops: int
    """The BFS's hops (`[memory.graph] max_hops`)."""
    activation_max_hops: int
    candidates: int
    min_score: float
    record_usage: bool
    recall_timeout_ms: int
    query_sensitive_cost: bool
    default_decay_rate: float
    temporal_decay_rate: float
    community_refresh_interval: int


class Versions(msgspec.Struct, frozen=True, kw_only=True):
    """The versions of what runs the memory."""

    apexmem: str
    readmodel_layout: int
    python: str
    database: str
    """The SQLite library's version, or the PostgreSQL server's."""


class Status(msgspec.Struct, frozen=True, kw_only=True):
    """A memory's status (`Memory.status`): JSON-encodable, without data."""

    counts: Counts
    lags: Lags
    settings: StatusSettings
    versions: Versions


def status_of(
    log: Log,
    store: ReadModels,
    settings: Settings,
    similarity: Similarity | None,
    now: datetime,
) -> Status:
    """The status of the memory made of `log` and `store` at `now` (what has faded), its
    read models read in one read transaction."""
    head = log.last_position()
    graph = settings.memory.graph
    with store.read() as connection:
        fading = fading_at(connection, now=now, known_at=None, default=graph.default_decay_rate)
        held = graph_stats(connection, fading=fading, now=fading.at)
        links = _count(connection, select(func.count()).select_from(fact_links))
        formed = connection.execute(select(func.max(communities.c.formed_position))).scalar()
        vectors = None if similarity is None else tracked_position(connection, VECTORS)
        backend: Backend = "postgresql" if connection.dialect.name == "postgresql" else "sqlite"
        database = _database_version(connection, backend)
    behind = max(0, head - held.position)
    counts = Counts(
        events=log.count(),
        entities=held.entities,
        aliases=held.aliases,
        facts_believed=held.current_facts,
        facts_faded=held.faded_facts,
        fact_versions=held.fact_versions,
        episodes=held.episodes,
        messages=held.messages,
        messages_unextracted=held.unextracted_messages,
        fact_links=links,
        communities=held.communities,
    )
    lags = Lags(
        head=head,
        graph=behind,
        full_text=behind,
        vectors=None if vectors is None else max(0, head - vectors),
        communities=None if formed is None else max(0, head - int(formed)),
    )
    return Status(
        counts=counts,
        lags=lags,
        settings=_settings(settings, backend, similarity),
        versions=Versions(
            apexmem=metadata.version("apexmem"),
            readmodel_layout=LAYOUT,
            python=platform.python_version(),
            database=database,
        ),
    )


def _settings(
    settings: Settings, backend: Backend, similarity: Similarity | None
) -> StatusSettings:
    graph = settings.memory.graph
    activation = graph.spreading_activation
    recall = settings.memory.recall
    return StatusSettings(
        backend=backend,
        embedder=None if similarity is None else similarity.embedder.name,
        recall_limit=graph.recall_limit,
        recall_mode="activation" if activation.enabled else "bfs",
        max_hops=graph.max_hops,
        activation_max_hops=activation.max_hops,
        candidates=recall.candidates,
        min_score=recall.min_score,
        record_usage=recall.record_usage,
        recall_timeout_ms=activation.recall_timeout_ms,
        query_sensitive_cost=graph.query_sensitive_cost,
        default_decay_rate=graph.default_decay_rate,
        temporal_decay_rate=graph.temporal_decay_rate,
        community_refresh_interval=graph.community_refresh_interval,
    )


def _count(connection: Connection, statement: object) -> int:
    return int(connection.execute(statement).scalar() or 0)  # type: ignore[call-overload]


def _database_version(connection: Connection, backend: Backend) -> str:
    if backend == "sqlite":
        return f"SQLite {sqlite3.sqlite_version}"
    server = connection.execute(select(func.current_setting("server_version"))).scalar()
    return f"PostgreSQL {server}"
