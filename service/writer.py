"""The write path: validate, load stream states, decide, append atomically, retry on conflict."""

from __future__ import annotations

import threading
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
from apexmem.events.errors import (
    ApexmemError,
    ConcurrencyError,
    NotFoundError,
    ValidationError,
)
from apexmem.events.log import AppendResult, EventLog, LogAccess
from apexmem.projections.streams import evolve_policy, fold
from apexmem.service.cache import StateCache
from apexmem.service.collector import paused
from apexmem.service.handlers import HANDLERS, Context, batch_plan
from apexmem.service.logs import get_logger
from apexmem.service.moves import Moves
from apexmem.service.naming import name_key
from apexmem.service.resolution import SimilarWrites
from apexmem.service.results import Result
from apexmem.service.staging import Staging

__all__ = ["Writer"]

_logger = get_logger()
_PAUSE_COLLECTOR_AT: Final = 64
"""Commands in a batch from which the garbage collector is paused while it is written (a
single write allocates too little for collections to matter)."""
_receipt_decoder: Final = msgspec.json.Decoder(list[Result])


class Writer:
    """Turns commands into events: one atomic append per call, retried on stale state."""

    def __init__(
        self,
        log: EventLog,
        settings: Settings,
        clock: Callable[[], datetime],
        *,
        cache: StateCache | None = None,
    ) -> None:
        self._log = log
        self._settings = settings
        self._clock = clock
        self._cache = cache if cache is not None else StateCache()
        self._lock = threading.Lock()
        self._ontology = Ontology()
        self._policy = PolicyState()
        self.similar: SimilarWrites | None = None
        """Set by the facade when similarity resolution or belief revision is on."""
        self.moves: Moves | None = None
        """Set by the facade: a merge moves the source's current facts (service.moves)."""

    def execute(
        self, commands: Sequence[Command], *, idempotency_key: str | None = None
    ) -> list[Result]:
        """Apply commands as one atomic append and return one result per command.

        Each attempt decides under the log's write lock: the reads it needs then share the
        append's transaction (one lock for a single fact rather than one read transaction
        per stream it reads). The first attempt decides from cached states; when one of
        them was stale (another process appended to the stream) the append conflicts, and
        the batch is decided again from freshly read states.
        """
        retries = self._settings.memory.log.write_retries
        pause = paused() if len(commands) >= _PAUSE_COLLECTOR_AT else nullcontext()
        with self._lock, pause:
            for attempt in range(retries + 1):
                try:
                    cache = self._cache if attempt == 0 else StateCache()
                    return self._attempt(cache, commands, idempotency_key)
                except ConcurrencyError:
                    _logger.info("write.conflicted", attempt=attempt + 1, retries=retries)
                    if attempt == retries:
                        raise
            raise AssertionError("unreachable")

    def ontology(self) -> Ontology:
        """The ontology with every relation mapping in the log so far."""
        with self._lock:
            self._refresh_policy(self._log)
            return self._ontology

    def _attempt(
        self, cache: StateCache, commands: Sequence[Command], key: str | None
    ) -> list[Result]:
        staging: Staging | None = None
        try:
            with self._log.locked() as locked:
                head = locked.last_position()
                _sync(self._cache, locked, head)
                complete = cache.complete_at == head or (head == 0 and len(cache) == 0)
                staging = Staging(locked, cache, self.similar, complete=complete)
                results = self._decide_and_append(locked, staging, commands, key)
                appended = locked.appended
        except ConcurrencyError:
            if staging is not None:
                self._cache.forget(staging.touched())
            raise
        assert staging is not None
        # Every stream of the log is cached while only this writer appends from a log it saw
        # empty: a stream missing from the cache is then new and need not be read.
        # Set before the commit below, which clears it should it evict a state.
        cache.complete_at = head + appended if complete else None
        staging.commit()  # only now: the batch's states are the log's once it committed
        if cache is not self._cache:
            self._cache.update(cache)
        self._cache.synced_at = head + appended
        return results

    def _decide_and_append(
        self, log: LogAccess, staging: Staging, commands: Sequence[Command], key: str | None
    ) -> list[Result]:
        if key is not None and (first := log.repeated(key)) is not None:
            return _from_receipt(first)
        self._refresh_policy(log)
        context = Context(
            staging=staging,
            log=log,
            ontology=self._ontology,
            strategy=self._settings.memory.graph.conflict_strategy,
            now=self._clock(),
            cause=key,
            moves=self.moves,
        )
        _prefetch(context, commands)
        drafts = [_handle(context, c, i, len(commands)) for i, c in enumerate(commands)]
        appended = log.append(
            staging.events,
            idempotency_key=key,
            receipt=msgspec.json.encode(drafts) if key is not None else None,
        )
        if appended.repeated:
            return _from_receipt(appended)
        return _placed(drafts, appended.positions)

    def _refresh_policy(self, log: LogAccess) -> None:
        """Fold policy events another process may have appended since we last looked."""
        newer = log.read_stream(POLICY_ID, after_version=self._policy.version)
        if newer:
            self._policy = fold(evolve_policy, self._policy, (e.data for e in newer))
            self._ontology = Ontology([*DEFAULT_MAPPINGS, *self._policy.mappings])


def _sync(cache: StateCache, log: LogAccess, head: int) -> None:
    """Forget the cached states of streams other processes appended to since the cache was
    last true, and every name if one of them merged an entity.

    A stream this writer only reads (an entity it resolves, a slot it decides a retraction
    or a merge from) never conflicts on append, so a stale state of it would go unnoticed.
    """
    if cache.synced_at == head:
        return
    if cache.empty():  # nothing to be stale (a writer's first batch on a log others wrote)
        cache.synced_at = head
        return
    streams, tags = log.changed_since(cache.synced_at)
    cache.forget(streams, names="entity-merged.v1" in tags)
    cache.synced_at = head


def _prefetch(context: Context, commands: Sequence[Command]) -> None:
    """Load every alias, entity, slot and episode stream the batch needs in a few reads.

    The names and slot plans derived here are memoized (`name_key`, `batch_plan`), so the
    handlers that run next find them instead of deriving them again.
    """
    staging = context.staging
    pairs = list(dict.fromkeys(pair for command in commands for pair in _names(command)))
    known = staging.known_names(pairs)
    owners: dict[tuple[str, str], UUID] = {pair: r.entity_id for pair, r in known.items()}
    names: dict[tuple[str, str], UUID] = {}  # alias streams of names not resolved before
    for pair in pairs:
        if pair not in owners:
            with suppress(ApexmemError):  # bad names are reported when the command runs
                names[pair] = name_key("name", *pair).alias
    staging.load("alias", names.values())
    found = {pair: _owner(staging, pair, alias) for pair, alias in names.items()}
    staging.load("entity", found.values())
    owners.update(found)
    slots = [
        slot
        for c in commands
        if isinstance(c, AssertFact) and (slot := _planned_slot(context, c, owners)) is not None
    ]
    staging.load("slot", slots)
    episodes = [
        episode_id(c.episode)
        for c in commands
        if isinstance(c, RecordMessage) and c.episode is not None
    ]
    staging.load("episode", episodes)


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
        slot = batch_plan(context, command).slot(subject, target, sentence)
    except ApexmemError:  # reported when the command runs
        return None
    if command.fact:  # a sentence made from names is the handler's to make
        context.planned[id(command)] = (subject, target, sentence, slot)
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


def _owner(staging: Staging, pair: tuple[str, str], alias: UUID) -> UUID:
    """The entity a name resolves to now, or the id it would be created with."""
    state = staging.state("alias", alias)
    if isinstance(state, AliasState) and state.entity_id is not None:
        return state.entity_id
    key = name_key("name", *pair)
    return entity_id(key.entity_type, key.canonical)


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
