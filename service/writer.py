"""The write path: validate, load stream states, decide, append atomically, retry on conflict."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext, suppress
from datetime import datetime
from typing import Final
from uuid import UUID

import msgspec

from apexmem.domain.commands import (
    AddAlias,
    AssertFact,
    Command,
    MergeEntities,
    ObserveEntity,
    RecordMessage,
)
from apexmem.domain.identities import POLICY_ID, entity_id, episode_id
from apexmem.domain.names import clean_sentence
from apexmem.domain.ontology import DEFAULT_MAPPINGS, Ontology
from apexmem.domain.settings import Settings
from apexmem.domain.state import AliasState, PolicyState
from apexmem.events.envelope import AppendResult, NewEvent, RecordedEvent
from apexmem.events.erasure import ERASED_TAG
from apexmem.events.errors import (
    ApexmemError,
    ConcurrencyError,
    NotFoundError,
    ValidationError,
)
from apexmem.events.ports import LockedLog, Log, LogReads
from apexmem.projections.streams import evolve_policy, fold
from apexmem.service.cache import StateCache
from apexmem.service.collector import paused
from apexmem.service.handlers import HANDLERS, Context, batch_plan
from apexmem.service.logs import get_logger
from apexmem.service.moves import Moves
from apexmem.service.naming import NameKey, name_key
from apexmem.service.pipeline import Append, Pipeline
from apexmem.service.resolution import SimilarWrites
from apexmem.service.results import Result
from apexmem.service.staging import Staging

__all__ = ["COMMANDS", "Batch", "Writer"]

_logger = get_logger()
_PAUSE_COLLECTOR_AT: Final = 64
"""Commands in a batch from which the garbage collector is paused while it is written (a
single write allocates too little for collections to matter)."""
COMMANDS: Final = "commands"
"""The kind of operation a batch of commands is (what post-commit policies follow)."""
_receipt_decoder: Final = msgspec.json.Decoder(list[Result])


class Writer:
    """Turns commands into events: one atomic append per call through the pipeline."""

    def __init__(
        self,
        pipeline: Pipeline,
        log: Log,
        settings: Settings,
        clock: Callable[[], datetime],
        *,
        moves: Moves | None = None,
        similar: SimilarWrites | None = None,
        cache: StateCache | None = None,
    ) -> None:
        self._pipeline = pipeline
        self._log = log
        self._settings = settings
        self._clock = clock
        self._cache = cache if cache is not None else StateCache()
        self._ontology = Ontology()
        self._policy = PolicyState()
        self.similar = similar
        """Similarity on the write path (resolution, belief revision); None when both are off."""
        self.moves = moves
        """A merge moves the source's current facts (service.moves)."""

    def execute(
        self,
        commands: Sequence[Command],
        *,
        idempotency_key: str | None = None,
        kind: str = COMMANDS,
    ) -> list[Result]:
        """Apply commands as one atomic append and return one result per command.

        Each attempt decides under the log's write lock: the reads it needs then share the
        append's transaction (one lock for a single fact rather than one read transaction
        per stream it reads). The first attempt decides from cached states; when one of
        them was stale (another process appended to the stream) the append conflicts, and
        the batch is decided again from freshly read states.
        """
        pause = paused() if len(commands) >= _PAUSE_COLLECTOR_AT else nullcontext()
        with pause:
            return self._pipeline.run(
                kind, lambda tried: self.batch(commands, key=idempotency_key, fresh=tried > 0)
            )

    def batch(
        self,
        commands: Sequence[Command],
        *,
        key: str | None = None,
        fresh: bool = False,
        extra: Sequence[NewEvent] = (),
    ) -> Batch:
        """One attempt at `commands` (decided from fresh states when `fresh`), for an
        operation that appends them with `extra` events of its own in one append."""
        return Batch(self, StateCache() if fresh else self._cache, commands, key, extra)

    def ontology(self) -> Ontology:
        """The ontology with every relation mapping in the log so far."""
        with self._pipeline.lock:
            self._refresh_policy(self._log)
            return self._ontology

    def _refresh_policy(self, log: LogReads) -> None:
        """Fold policy events another process may have appended since we last looked."""
        newer = log.read_stream(POLICY_ID, after_version=self._policy.version)
        if newer:
            self._policy = fold(evolve_policy, self._policy, (e.data for e in newer))
            self._ontology = Ontology([*DEFAULT_MAPPINGS, *self._policy.mappings])


class Batch:
    """One attempt at a batch of commands (see Writer.execute), its results once appended."""

    __slots__ = (
        "_cache",
        "_commands",
        "_complete",
        "_drafts",
        "_extra",
        "_head",
        "_key",
        "_read",
        "_repeated",
        "_staging",
        "_writer",
    )

    def __init__(
        self,
        writer: Writer,
        cache: StateCache,
        commands: Sequence[Command],
        key: str | None,
        extra: Sequence[NewEvent] = (),
    ) -> None:
        self._writer = writer
        self._extra = extra
        self._cache = cache
        self._commands = commands
        self._key = key
        self._staging: Staging | None = None
        self._head = 0
        self._complete = False
        self._drafts: list[Result] = []
        self._repeated: AppendResult | None = None
        self._read: _Reads | None = None

    def decide(self, log: LogReads) -> Append:
        """The batch's events, decided from `log` as it is at its last position (read first:
        whatever changed after it is what `still_holds` looks for)."""
        writer, key = self._writer, self._key
        self._read = read = _Reads(log)
        log = read
        self._head = head = log.last_position()
        _sync(writer._cache, log, head)
        cache = self._cache
        self._complete = cache.complete_at == head or (head == 0 and len(cache) == 0)
        self._staging = staging = Staging(log, cache, writer.similar, complete=self._complete)
        if key is not None and (first := log.repeated(key)) is not None:
            self._repeated = first
            return Append(events=self._extra)
        writer._refresh_policy(log)
        context = Context(
            staging=staging,
            log=log,
            ontology=writer._ontology,
            strategy=writer._settings.memory.graph.conflict_strategy,
            now=writer._clock(),
            cause=key,
            moves=writer.moves,
        )
        _prefetch(context, self._commands)
        count = len(self._commands)
        self._drafts = [_handle(context, c, i, count) for i, c in enumerate(self._commands)]
        receipt = msgspec.json.encode(self._drafts) if key is not None else None
        events = [*staging.events, *self._extra] if self._extra else staging.events
        return Append(events=events, idempotency_key=key, receipt=receipt)

    def still_holds(self, log: LockedLog) -> None:
        """Raise ConcurrencyError when a stream the batch read or wrote was appended to
        since it decided, an entity was merged, or its idempotency key was used meanwhile."""
        assert self._read is not None and self._staging is not None
        streams, tags = log.changed_since(self._head)
        if not streams and not tags:
            return
        read = self._read.streams.union(self._staging.touched())
        if "entity-merged.v1" in tags or not read.isdisjoint(streams):
            raise ConcurrencyError("a stream the batch read was appended to after it decided")
        if self._key is not None and self._repeated is None and log.repeated(self._key):
            raise ConcurrencyError("the batch's idempotency key was used after it decided")

    def finish(self, appended: AppendResult | None) -> list[Result]:
        writer, cache, staging = self._writer, self._cache, self._staging
        assert staging is not None
        written = 0 if appended is None or appended.repeated else len(appended.positions)
        # Others appended between the decision and the lock (to streams it did not read):
        # the cache is then true at the decision's head only, and not every stream is in it.
        behind = written > 0 and appended is not None and appended.positions[0] != self._head + 1
        synced = self._head if behind else self._head + written
        # Every stream of the log is cached, or known to need a read, from a log this writer
        # saw empty on: a stream missing from the cache and not `unknown` is new and need not
        # be read. Others' appends after `synced` (behind: between the decision and this
        # append) are read by the next `_sync`, which marks their streams unknown.
        # Set before the commit below, which clears it should it evict a state.
        cache.complete(synced if self._complete else None)
        staging.commit()  # only now: the batch's states are the log's once it committed
        if cache is not writer._cache:
            writer._cache.update(cache)
        writer._cache.synced_at = synced
        if self._repeated is not None:
            return _from_receipt(self._repeated)
        if appended is None:
            return _placed(self._drafts, [])
        if appended.repeated:
            return _from_receipt(appended)
        return _placed(self._drafts, appended.positions)

    def conflicted(self) -> None:
        if self._staging is not None:
            self._writer._cache.forget(self._staging.touched())


class _Reads:
    """The log as a batch reads it, noting every stream it asked for (found or not)."""

    __slots__ = ("_log", "streams")

    def __init__(self, log: LogReads) -> None:
        self._log = log
        self.streams: set[UUID] = set()

    def read_streams(
        self, stream_ids: Sequence[UUID], *, after_version: int = 0
    ) -> dict[UUID, list[RecordedEvent]]:
        self.streams.update(stream_ids)
        return self._log.read_streams(stream_ids, after_version=after_version)

    def read_stream(self, stream_id: UUID, *, after_version: int = 0) -> list[RecordedEvent]:
        self.streams.add(stream_id)
        return self._log.read_stream(stream_id, after_version=after_version)

    def find(self, key: str) -> RecordedEvent | None:
        found = self._log.find(key)
        if found is not None:
            self.streams.add(found.stream_id)
        return found

    def repeated(self, idempotency_key: str) -> AppendResult | None:
        return self._log.repeated(idempotency_key)

    def changed_since(self, position: int) -> tuple[list[UUID], list[str]]:
        return self._log.changed_since(position)

    def last_position(self) -> int:
        return self._log.last_position()


def _sync(cache: StateCache, log: LogReads, head: int) -> None:
    """Forget the cached states of streams other processes appended to since the cache was
    last true, and every name if one of them merged an entity.

    A stream this writer only reads (an entity it resolves, a slot it decides a retraction
    or a merge from) never conflicts on append, so a stale state of it would go unnoticed.
    """
    if cache.synced_at == head:
        return
    complete = cache.complete_at is not None and cache.complete_at == cache.synced_at
    if cache.empty() and not complete:  # nothing to be stale (a first batch on a log others wrote)
        cache.synced_at = head
        return
    streams, tags = log.changed_since(cache.synced_at)
    if ERASED_TAG in tags:  # records were blanked in place: any cached state may hold them
        streams = [*streams, *(UUID(int=key) for key in cache.streams())]
        complete = False
    # Complete before, complete now: every stream others began or changed is `unknown`.
    cache.forget(streams, names="entity-merged.v1" in tags or ERASED_TAG in tags)
    cache.synced_at = head
    cache.complete(head if complete else None)


def _prefetch(context: Context, commands: Sequence[Command]) -> None:
    """Load every alias, entity, slot and episode stream the batch needs in a few reads.

    The names and slot plans derived here are memoized (`name_key`, `batch_plan`), so the
    handlers that run next find them instead of deriving them again.
    """
    staging = context.staging
    pairs = _batch_names(commands)
    known = staging.known_names(pairs)
    owners: dict[tuple[str, str], UUID] = {pair: r.entity_id for pair, r in known.items()}
    keys: dict[tuple[str, str], NameKey] = {}  # names not resolved before
    for pair in pairs:
        if pair not in owners:
            with suppress(ApexmemError):  # bad names are reported when the command runs
                keys[pair] = name_key("name", *pair)
    staging.load("alias", [key.alias for key in keys.values()])
    state = staging.state
    for pair, key in keys.items():  # the entity a name resolves to now, or its new id
        alias = state("alias", key.alias)
        claimed = alias.entity_id if isinstance(alias, AliasState) else None
        owners[pair] = claimed if claimed is not None else entity_id(key.entity_type, key.canonical)
    staging.load("entity", [owners[pair] for pair in keys])
    slots = []
    episodes = []
    for c in commands:
        if type(c) is AssertFact:
            slot = _planned_slot(context, c, owners)
            if slot is not None:
                slots.append(slot)
        elif isinstance(c, RecordMessage) and c.episode is not None:
            episodes.append(episode_id(c.episode))
    staging.load("slot", slots)
    staging.load("episode", episodes)


def _batch_names(commands: Sequence[Command]) -> list[tuple[str, str]]:
    """Every (name, type as given) pair the batch's commands name, each once, in order."""
    pairs: dict[tuple[str, str], None] = {}
    for command in commands:
        if type(command) is AssertFact:  # most commands: no list made for them
            pairs[(command.subject, command.subject_type)] = None
            if command.object is not None:
                pairs[(command.object, command.object_type)] = None
        else:
            pairs.update(dict.fromkeys(_names(command)))
    return list(pairs)


def _planned_slot(
    context: Context, command: AssertFact, owners: dict[tuple[str, str], UUID]
) -> UUID | None:
    subject = owners.get((command.subject, command.subject_type))
    target = owners.get((command.object, command.object_type)) if command.object else None
    if subject is None or (command.object is not None and target is None):
        return None
    note = command.object is None and command.value is None
    if note and not command.fact:  # its sentence needs the subject's display name
        return None
    try:
        sentence = clean_sentence(command.fact) if command.fact else ""
        plan = batch_plan(context, command)
        slot = plan.slot(subject, target, sentence)
    except ApexmemError:  # reported when the command runs
        return None
    if command.fact:  # a sentence made from names is the handler's to make
        context.planned[id(command)] = (subject, target, sentence, slot, plan)
    return slot


def _names(command: Command) -> list[tuple[str, str]]:
    if isinstance(command, AssertFact):
        names = [(command.subject, command.subject_type)]
        if command.object is not None:
            names.append((command.object, command.object_type))
        return names
    if isinstance(command, AddAlias):
        return [(command.entity, command.entity_type), (command.alias, command.entity_type)]
    if isinstance(command, ObserveEntity):
        return [(command.name, command.entity_type)]
    if isinstance(command, MergeEntities):
        return [(command.source, command.entity_type), (command.target, command.entity_type)]
    return []


def _handle(context: Context, command: Command, index: int, count: int) -> Result:
    """Run one command's handler; in a batch, errors name the command's index."""
    try:
        return HANDLERS[type(command)](context, command)
    except ValidationError as e:
        if count == 1:
            raise
        raise ValidationError(f"[{index}].{e.field}", e.value, e.rule) from e
    except NotFoundError as e:
        if count == 1:
            raise
        raise NotFoundError(f"[{index}] {e}") from e


def _placed(drafts: list[Result], positions: list[int]) -> list[Result]:
    """Results with event indices replaced by the log positions the events took."""
    return [
        msgspec.structs.replace(d, position=positions[d.position] if d.position >= 0 else 0)
        for d in drafts
    ]


def _from_receipt(first: AppendResult) -> list[Result]:
    """The results of the first append made with an idempotency key."""
    return _placed(_receipt_decoder.decode(first.receipt or b"[]"), first.positions)
