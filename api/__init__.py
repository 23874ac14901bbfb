"""apexmem: a temporal knowledge-graph memory for AI agents, event-sourced and append-only.

from apexmem import Memory
with Memory.open("./mem") as mem:
    mem.assert_fact(subject="Alice", relation="works_at", object="Acme", ...)
"""

from apexmem.domain.commands import (
    AddAlias,
    AssertFact,
    Command,
    LinkFacts,
    MapRelation,
    MergeEntities,
    ObserveEntity,
    RecordMessage,
    RetractFact,
    SetDecayRate,
)
from apexmem.domain.embedding import Embedder, HashingEmbedder
from apexmem.domain.extraction import (
    ExtractedFact,
    Extraction,
    Extractor,
    KnownName,
    Mention,
    Utterance,
)
from apexmem.domain.heuristic import HeuristicExtractor
from apexmem.domain.resolution import Candidate, Disambiguator, KeepSeparate
from apexmem.domain.settings import Settings, parse_settings
from apexmem.domain.summaries import CommunityDraft, ExtractiveSummarizer, Summarizer
from apexmem.embedders import WordLlamaEmbedder
from apexmem.events.errors import (
    ApexmemError,
    ConcurrencyError,
    DiskFullError,
    IntegrityViolation,
    NotFoundError,
    ValidationError,
)
from apexmem.memory import Memory
from apexmem.replay.audit import HistoryEntry
from apexmem.replay.snapshot import FactView, Snapshot
from apexmem.replay.verify import VerifyReport
from apexmem.service.backfill import BackfillReport
from apexmem.service.fact_links import FactGraph, FactLink
from apexmem.service.linking import Linking
from apexmem.service.merging import MergeRow
from apexmem.service.results import (
    AliasRef,
    EntityRef,
    FactRef,
    LinkRef,
    MergeRef,
    MessageRef,
    PolicyRef,
    Result,
    RetractRef,
)
from apexmem.service.similarity import Similar
from apexmem.service.upkeep import Assignment, Detection, Placement

__all__ = [
    "AddAlias",
    "AliasRef",
    "ApexmemError",
    "AssertFact",
    "Assignment",
    "BackfillReport",
    "Candidate",
    "Command",
    "CommunityDraft",
    "ConcurrencyError",
    "Detection",
    "Disambiguator",
    "DiskFullError",
    "Embedder",
    "EntityRef",
    "ExtractedFact",
    "Extraction",
    "ExtractiveSummarizer",
    "Extractor",
    "FactGraph",
    "FactLink",
    "FactRef",
    "FactView",
    "HashingEmbedder",
    "HeuristicExtractor",
    "HistoryEntry",
    "IntegrityViolation",
    "KeepSeparate",
    "KnownName",
    "LinkFacts",
    "LinkRef",
    "Linking",
    "MapRelation",
    "Memory",
    "Mention",
    "MergeEntities",
    "MergeRef",
    "MergeRow",
    "MessageRef",
    "NotFoundError",
    "ObserveEntity",
    "Placement",
    "PolicyRef",
    "RecordMessage",
    "Result",
    "RetractFact",
    "RetractRef",
    "SetDecayRate",
    "Settings",
    "Similar",
    "Snapshot",
    "Summarizer",
    "Utterance",
    "ValidationError",
    "VerifyReport",
    "WordLlamaEmbedder",
    "parse_settings",
]
