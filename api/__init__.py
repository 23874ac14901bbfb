"""apexmem: a temporal knowledge-graph memory for AI agents, event-sourced and append-only.

from apexmem import Memory
with Memory.open("./mem") as mem:
    mem.assert_fact(subject="Alice", relation="works_at", object="Acme", ...)
"""

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
)
from apexmem.domain.embedding import Embedder, HashingEmbedder
from apexmem.domain.settings import Settings, parse_settings
from apexmem.embedders import WordLlamaEmbedder
from apexmem.events.errors import (
    ApexmemError,
    ConcurrencyError,
    IntegrityViolation,
    NotFoundError,
    ValidationError,
)
from apexmem.memory import Memory
from apexmem.replay.audit import HistoryEntry
from apexmem.replay.snapshot import FactView, Snapshot
from apexmem.replay.verify import VerifyReport
from apexmem.results import (
    AliasRef,
    EntityRef,
    FactRef,
    MergeRef,
    MessageRef,
    PolicyRef,
    Result,
    RetractRef,
)
from apexmem.similarity import Similar

__all__ = [
    "AddAlias",
    "AliasRef",
    "ApexmemError",
    "AssertFact",
    "Command",
    "ConcurrencyError",
    "Embedder",
    "EntityRef",
    "FactRef",
    "FactView",
    "HashingEmbedder",
    "HistoryEntry",
    "IntegrityViolation",
    "MapRelation",
    "Memory",
    "MergeEntities",
    "MergeRef",
    "MessageRef",
    "NotFoundError",
    "ObserveEntity",
    "PolicyRef",
    "RecordMessage",
    "Result",
    "RetractFact",
    "RetractRef",
    "SetDecayRate",
    "Settings",
    "Similar",
    "Snapshot",
    "ValidationError",
    "VerifyReport",
    "WordLlamaEmbedder",
    "parse_settings",
]
