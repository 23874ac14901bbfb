"""Settings: one TOML file whose keys mirror the seeds' `[memory.graph]` sections, validated."""

from __future__ import annotations

import math
import tomllib
from typing import Annotated, Final, Literal

import msgspec

from apexmem.events.errors import ValidationError

__all__ = [
    "MAX_DECAY_INTERVAL_SECS",
    "TOKEN_PATTERN",
    "ActivationSettings",
    "BeliefRevisionSettings",
    "FactLinkSettings",
    "GraphSettings",
    "LogSettings",
    "MemorySettings",
    "NoteLinkingSettings",
    "ProjectionSettings",
    "RpeSettings",
    "ServerSettings",
    "Settings",
    "VectorSettings",
    "parse_settings",
]

TOKEN_PATTERN = "^[!-~]{16,512}$"
"""A bearer token: 16 to 512 visible ASCII characters."""
_Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
_UnitOpen = Annotated[float, msgspec.Meta(gt=0.0, le=1.0)]
_NonNegative = Annotated[int, msgspec.Meta(ge=0)]
_Positive = Annotated[int, msgspec.Meta(ge=1)]
_HTTP_URL: Final = r"^https?://[^\s/]+(/\S*)?$"
_ENV_NAME: Final = r"^([A-Za-z_][A-Za-z0-9_]{0,127})?$"
MAX_DECAY_INTERVAL_SECS: Final = 36_500 * 86_400
"""The longest `link_weight_decay_interval_secs`: 100 years."""


class _Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class LogSettings(_Section, frozen=True, kw_only=True):
    """`[memory.log]`: durability and the write path."""

    synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    write_retries: Annotated[int, msgspec.Meta(ge=0, le=20)] = 5


class NoteLinkingSettings(_Section, frozen=True, kw_only=True):
    """`[memory.graph.note_linking]` (A-MEM)."""

    enabled: bool = False
    similarity_threshold: _Unit = 0.85
    top_k: _Positive = 10
    timeout_secs: _Positive = 5
    link_weight_decay_lambda: _UnitOpen = 0.95
    link_weight_decay_interval_secs: Annotated[
        int, msgspec.Meta(ge=1, le=MAX_DECAY_INTERVAL_SECS)
    ] = 86_400
    """Seconds between usage decay passes, 1 to 100 years: a pass's cutoff (now minus this)
    and next due time (plus this) must stay within the dates a datetime holds."""


class FactLinkSettings(_Section, frozen=True, kw_only=True):
    """`[memory.graph.fact_links]`: links between facts (seed 004's memory_link)."""

    co_occurrence_weight: _UnitOpen = 0.3
    """The strength of the `related_to` link the usage pass (`decay_usage`) records
    between two facts recalled together often enough (seed 004's coOccurrenceWeight)."""
    co_occurrence_recalls: Annotated[int, msgspec.Meta(ge=2, le=10_000)] = 3
    """How many of the recalls since the previous usage pass must have returned both
    facts of a pair for it to be linked (2 to 10,000); a pair already linked in any way
    is left as it is."""


class ActivationSettings(_Section, frozen=True, kw_only=True):
    """`[memory.graph.spreading_activation]` (SYNAPSE)."""

    enabled: bool = False
    decay_lambda: _UnitOpen = 0.85
    max_hops: _Positive = 3
    activation_threshold: _Unit = 0.1
    inhibition_threshold: _Unit = 0.8
    max_activated_nodes: _Positive = 50
    seed_structural_weight: _Unit = 0.4
    seed_community_cap: _NonNegative = 3
    recall_timeout_ms: _NonNegative = 500


class BeliefRevisionSettings(_Section, frozen=True, kw_only=True):
    """`[memory.graph.belief_revision]`."""

    enabled: bool = False
    similarity_threshold: _Unit = 0.85


class RpeSettings(_Section, frozen=True, kw_only=True):
    """`[memory.graph.rpe]`: skip extracting turns that say little new (D-MEM's gate)."""

    enabled: bool = False
    threshold: _Unit = 0.3
    """A turn whose surprise (reward prediction error) is below this is not extracted."""
    max_skip_turns: _NonNegative = 5
    """Turns of a conversation skipped in a row at most; the next one is always extracted."""


class GraphSettings(_Section, frozen=True, kw_only=True):
    """`[memory.graph]`: resolution, recall, decay, communities and eviction."""

    max_hops: _NonNegative = 2
    recall_limit: _Positive = 10
    use_embedding_resolution: bool = False
    entity_similarity_threshold: _Unit = 0.85
    entity_ambiguous_threshold: _Unit = 0.70
    conflict_strategy: Literal["recency", "confidence"] = "recency"
    default_decay_rate: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 0.01
    temporal_decay_rate: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 0.0
    query_sensitive_cost: bool = False
    """PRISM: a recall's BFS expands first the entities nearest the question, each costing
    `(1 - confidence) * max(0.01, 1 - cos(question, entity))` over the edge it was reached
    by (`1 - confidence` without vectors). Only the order of the walk changes, never what
    recall returns."""
    community_refresh_interval: _Positive = 100
    """Messages extracted (by `backfill` or the extraction after `add_messages`) between two
    community detections run by themselves, in the background, never holding up a write."""
    community_summary_concurrency: Annotated[int, msgspec.Meta(ge=1, le=64)] = 4
    """Summaries of new or changed communities asked for at once in a detection (1: one
    after another)."""
    lpa_edge_chunk_size: _NonNegative = 10_000
    community_summary_max_prompt_bytes: _NonNegative = 8_192
    expired_edge_retention_days: Annotated[int, msgspec.Meta(ge=1, le=36_500)] = 90
    """Days an ended fact version, or an entity with no active fact, stays before `evict`
    archives it (1 to 36,500)."""
    max_entities: _NonNegative = 0
    edge_history_limit: _Positive = 100
    user_entity: Annotated[str, msgspec.Meta(max_length=512)] = "User"
    """The person entity a `user` / `human` speaker stands for; empty: none."""
    assistant_entity: Annotated[str, msgspec.Meta(max_length=512)] = ""
    """The entity an `assistant` / `bot` / `agent` / `model` speaker stands for; empty: none."""
    extract_model: Annotated[str, msgspec.Meta(max_length=200)] = ""
    """The chat model that reads messages (`apexmem.extractors.ChatExtractor`); empty: the
    built-in offline extractor."""
    extract_base_url: Annotated[str, msgspec.Meta(pattern=_HTTP_URL)] = "http://127.0.0.1:11434/v1"
    """Where an OpenAI-compatible chat completions API serves `extract_model` (the default
    is a local Ollama)."""
    extract_api_key_env: Annotated[str, msgspec.Meta(pattern=_ENV_NAME)] = ""
    """The environment variable holding the API key; empty: no key is sent."""
    extraction_timeout_secs: Annotated[int, msgspec.Meta(ge=1, le=3_600)] = 15
    max_entities_per_message: Annotated[int, msgspec.Meta(ge=1, le=10)] = 10
    """Entities the model may name per message (at most 10, the memory's own limit)."""
    max_edges_per_message: Annotated[int, msgspec.Meta(ge=1, le=15)] = 15
    """Facts the model may state per message (at most 15, the memory's own limit)."""
    rpe: RpeSettings = RpeSettings()
    note_linking: NoteLinkingSettings = NoteLinkingSettings()
    spreading_activation: ActivationSettings = ActivationSettings()
    belief_revision: BeliefRevisionSettings = BeliefRevisionSettings()
    fact_links: FactLinkSettings = FactLinkSettings()


class ProjectionSettings(_Section, frozen=True, kw_only=True):
    """`[memory.projection]`: how the read models follow the log."""

    inline: bool | None = None
    """Project after every write and before every query (read your own writes); turn off
    when `apexmem project --follow` runs as its own process. Unset, it is on, except for
    `apexmem serve` and `apexmem mcp` on PostgreSQL, which leave projection to followers."""
    batch_size: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 25_000
    """Events applied per read-model transaction (a catch-up of 1,000,000 facts from empty
    ran 12% faster at 25,000 than at 5,000; smaller batches hold a transaction less long)."""


class VectorSettings(_Section, frozen=True, kw_only=True):
    """`[memory.vectors]`: embeddings of entities, facts and messages, and their FAISS index."""

    enabled: bool = True
    """Embed what is written (inline when `[memory.projection] inline`) and answer `similar`."""
    embedder: Literal["wordllama", "minilm", "hashing"] = "wordllama"
    """`wordllama`: the model inside the installed wheel (never downloaded); `minilm`:
    all-MiniLM-L6-v2, a stronger sentence model, when its package is installed (the
    `minilm` extra, never downloaded at run time); `hashing`: a deterministic bag-of-words
    embedder, for tests and machines without the model."""
    hashing_dimension: Annotated[int, msgspec.Meta(ge=8, le=4096)] = 256
    hnsw_threshold: _Positive = 50_000
    """Vectors of one kind past which its index turns from exact to HNSW."""


class RecallSettings(_Section, frozen=True, kw_only=True):
    """`[memory.recall]`: what a recall records and how it fuses its lists."""

    record_usage: bool = True
    """Record which facts each recall returned (one usage event per recall, appended in
    batches) so retrieval counts feed the evolved weight."""
    usage_batch: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 32
    """Usage events held before they are appended together (also on close and before writes)."""
    candidates: Annotated[int, msgspec.Meta(ge=1, le=1_000)] = 10
    """Pieces of evidence each list (full text, vectors, graph) brings to the fusion, at
    least `limit`: a message and the facts learned from it are one piece. A list keeps this
    many pieces holding a message or a fact told, plus the pieces found among them only by
    a fact an extractor read out of a message (such a fact never takes a turn's place).
    Tuned on LoCoMo's categories (bench/locomo.py): a longer list lets items ranked low by
    two lists outrank the best of one."""
    full_text_weight: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 1.0
    vector_weight: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 1.0
    graph_weight: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 1.0
    """Each list's weight in the reciprocal rank fusion (`weight / (60 + rank)`); the
    defaults, with the three below, were tuned on LoCoMo's whole categories."""
    turn_before_share: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.5
    """A message also scores this share of the fused score of the message just before it
    in its conversation (a short reply carries the topic of what it answers)."""
    turn_after_share: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.3
    """A message also scores this share of the fused score of the message just after it."""
    speaker_boost: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 2.0
    relation_boost: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 2.0
    """Facts of the relation a question's verb asks about ("where ... work": works_at)
    whose subject the question names score `1 + relation_boost` times more."""
    min_score: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.0
    """A recall leaves out hits scoring under this share of its best hit's score (0: none
    left out); `recall(min_score=...)` overrides it."""
    """When a question names a participant of the conversations (a message speaker), their
    messages and the facts about them score `1 + speaker_boost` times more, and the name
    itself is not searched for (it would find the turns that address them)."""


class MemorySettings(_Section, frozen=True, kw_only=True):
    """`[memory]`."""

    log: LogSettings = LogSettings()
    projection: ProjectionSettings = ProjectionSettings()
    vectors: VectorSettings = VectorSettings()
    graph: GraphSettings = GraphSettings()
    recall: RecallSettings = RecallSettings()


class ServerSettings(_Section, frozen=True, kw_only=True):
    """`[server]`: `apexmem serve` and `apexmem mcp` over this memory."""

    token: Annotated[str, msgspec.Meta(pattern=TOKEN_PATTERN)] | None = None
    """The bearer token every request must carry (`APEXMEM_TOKEN` overrides it); under
    `apexmem serve --tenants ROOT`, each tenant's own token: 16 to 512 visible ASCII
    characters (an `Authorization` header carries no others, and no spaces around it)."""
    write_token: Annotated[str, msgspec.Meta(pattern=TOKEN_PATTERN)] | None = None
    """A token that reads and writes but may not forget (`token` is the admin's: everything,
    forget included); same form as `token`."""
    read_token: Annotated[str, msgspec.Meta(pattern=TOKEN_PATTERN)] | None = None
    """A token that only reads (a write or a forget with it is refused, 403); same form."""


class Settings(_Section, frozen=True, kw_only=True):
    """Every setting, validated; build with `parse_settings` or take the defaults."""

    memory: MemorySettings = MemorySettings()
    server: ServerSettings = ServerSettings()


def parse_settings(text: str, source: str = "settings") -> tuple[Settings, list[str]]:
    """Validate TOML text into Settings; returns the settings and warnings for the edge to log."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValidationError(source, None, f"is not valid TOML: {e}") from e
    try:
        settings = msgspec.convert(raw, Settings)
    except msgspec.ValidationError as e:
        message = str(e)
        field, _, rule = message.rpartition(" - at `$.")
        path = rule.rstrip("`") if field else source
        raise ValidationError(path, _lookup(raw, path), (field or message).lower()) from e
    return _cross_checks(settings)


def _cross_checks(settings: Settings) -> tuple[Settings, list[str]]:
    graph = settings.memory.graph
    activation = graph.spreading_activation
    _similarity_checks(settings)  # first: a threshold of 0 is named as itself
    if graph.entity_ambiguous_threshold >= graph.entity_similarity_threshold:
        raise ValidationError(
            "memory.graph.entity_ambiguous_threshold",
            graph.entity_ambiguous_threshold,
            f"must be below entity_similarity_threshold ({graph.entity_similarity_threshold})",
        )
    if activation.activation_threshold >= activation.inhibition_threshold:
        raise ValidationError(
            "memory.graph.spreading_activation.activation_threshold",
            activation.activation_threshold,
            f"must be below inhibition_threshold ({activation.inhibition_threshold})",
        )
    for name in ("default_decay_rate", "temporal_decay_rate"):
        value = getattr(graph, name)
        if not math.isfinite(value):
            raise ValidationError(f"memory.graph.{name}", value, "is not a finite number")
    warnings: list[str] = []
    if graph.lpa_edge_chunk_size == 0:
        warnings.append("memory.graph.lpa_edge_chunk_size = 0 falls back to 10000")
        graph = msgspec.structs.replace(graph, lpa_edge_chunk_size=10_000)
    memory = msgspec.structs.replace(settings.memory, graph=graph)
    return msgspec.structs.replace(settings, memory=memory), warnings


def _similarity_checks(settings: Settings) -> None:
    """Similarity thresholds above 0 (0 would match everything), and vectors to compare."""
    graph = settings.memory.graph
    thresholds = {
        "memory.graph.entity_similarity_threshold": graph.entity_similarity_threshold,
        "memory.graph.belief_revision.similarity_threshold": (
            graph.belief_revision.similarity_threshold
        ),
        "memory.graph.note_linking.similarity_threshold": graph.note_linking.similarity_threshold,
    }
    for key, value in thresholds.items():
        if not 0.0 < value <= 1.0:
            raise ValidationError(key, value, "must be above 0 and at most 1 (a cosine)")
    features = {
        "memory.graph.use_embedding_resolution": graph.use_embedding_resolution,
        "memory.graph.belief_revision.enabled": graph.belief_revision.enabled,
        "memory.graph.note_linking.enabled": graph.note_linking.enabled,
        "memory.graph.rpe.enabled": graph.rpe.enabled,
    }
    for key, on in features.items():
        if on and not settings.memory.vectors.enabled:
            raise ValidationError(key, True, "needs embeddings: set [memory.vectors] enabled")


def _lookup(raw: dict[str, object], path: str) -> object:
    node: object = raw
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node
