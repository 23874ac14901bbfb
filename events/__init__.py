"""The vocabulary and the log: event classes, their codec, the log contract and its
implementations (EventLog on SQLite, InMemoryLog), the chain."""

from apexmem.events.base import EDGE_TYPES, Event
from apexmem.events.catalogue import EVENT_CLASSES, STREAM_KINDS, AnyEvent, tag_of
from apexmem.events.codec import Stored, decode, encode, register_upcaster
from apexmem.events.community import CommunityDissolved, CommunityMemberAssigned
from apexmem.events.entity import AliasClaimed, EntityArchived, EntityMerged, EntityObserved
from apexmem.events.envelope import AppendResult, NewEvent, RawRecord, RecordedEvent, lookup_key
from apexmem.events.episode import EntitiesMentioned, EpisodeStarted, MessageRecorded
from apexmem.events.errors import (
    ApexmemError,
    ConcurrencyError,
    DiskFullError,
    IntegrityViolation,
    NotFoundError,
    ValidationError,
)
from apexmem.events.extraction import MessageExtracted
from apexmem.events.fact import (
    FactArchived,
    FactAsserted,
    FactReinforced,
    FactRetracted,
    FactSuperseded,
    Outcome,
)
from apexmem.events.log import EventLog
from apexmem.events.memory_log import InMemoryLog
from apexmem.events.policy import (
    CommunitySummarized,
    DecayRateSet,
    FactsRetrieved,
    RelationMapped,
    RetrievalCountsDecayed,
)
from apexmem.events.ports import LockedLog, Log, LogAccess
from apexmem.events.timeutil import UtcDateTime

__all__ = [
    "EDGE_TYPES",
    "EVENT_CLASSES",
    "STREAM_KINDS",
    "AliasClaimed",
    "AnyEvent",
    "ApexmemError",
    "AppendResult",
    "CommunityDissolved",
    "CommunityMemberAssigned",
    "CommunitySummarized",
    "ConcurrencyError",
    "DecayRateSet",
    "DiskFullError",
    "EntitiesMentioned",
    "EntityArchived",
    "EntityMerged",
    "EntityObserved",
    "EpisodeStarted",
    "Event",
    "EventLog",
    "FactArchived",
    "FactAsserted",
    "FactReinforced",
    "FactRetracted",
    "FactSuperseded",
    "FactsRetrieved",
    "InMemoryLog",
    "IntegrityViolation",
    "LockedLog",
    "Log",
    "LogAccess",
    "MessageExtracted",
    "MessageRecorded",
    "NewEvent",
    "NotFoundError",
    "Outcome",
    "RawRecord",
    "RecordedEvent",
    "RelationMapped",
    "RetrievalCountsDecayed",
    "Stored",
    "UtcDateTime",
    "ValidationError",
    "decode",
    "encode",
    "lookup_key",
    "register_upcaster",
    "tag_of",
]
