"""The write path: validate, load stream states, decide, append atomically, retry on conflict."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import suppress
from datetime import datetime
from typing import Final
from uuid import UUID

import msgspec
from apexmem.cache import StateCache
from apexmem.domain.commands import (
    AddAlias,
    AssertFact,
    Command,
    MergeEntities,
    ObserveEntity,
    RecordMessage,
)
from apexmem.domain.identities import POLICY_ID, alias_id, entity_id, episode_id
from apexmem.domain.names import canonical_name, clean, normalize_relation
from apexmem.domain.ontology import DEFAULT_MAPPINGS, Ontology
from apexmem.domain.settings import Settings
from apexmem.domain.state import AliasState, PolicyState
from apexmem.domain.types import parse_edge_type, resolve_entity_type
from apexmem.events.errors import ApexmemError, ConcurrencyError
from apexmem.events.log import EventLog
from apexmem.handlers import HANDLERS, Context, slot_of
from apexmem.logs import get_logger
from apexmem.projections.streams import evolve_policy, fold
from apexmem.results import Result
from apexmem.staging import Staging, load_states

__all__ = ["Writer"]

_logger = get_logger()
_receipt_decoder: Final = msgspec.json.Decoder(list[Result])


class Writer:
    """Turns commands into events: one atomic append per call, retried on stale state."""

    def __init__(self, log: EventLog, settings: Settings, clock: Callable[[], datetime]) -> None:
        self._log = log
        self._settings = settings
        self._clock = clock
        self._cache = StateCache()
        self._lock = threading.Lock()
        self._ontology = Ontology()
        self._policy = PolicyState()

    def execute(
        self, commands: Sequence[Command], *, idempotency_key: str | None = None
    ) -> list[Result]:
        """Apply commands as one atomic append and return one result per command."""
        retries = self._settings.memory.log.write_retries
        with self._lock:
            for attempt in range(retries + 1):
                staging = Staging(self._log, self._cache)
                try:
                    return self._attempt(staging, commands, idempotency_key)
                except ConcurrencyError:
                    self._cache.forget(staging.touched())
                    _logger.info("write.conflicted", attempt=attempt + 1, retries=retries)
                    if attempt == retries:
                        raise
        raise AssertionError("unreachable")

    def _attempt(
        self, staging: Staging, commands: Sequence[Command], key: str | None
    ) -> list[Result]:
        self._refresh_policy()
        self._prefetch(commands)
        context = Context(
            staging=staging,
            log=self._log,
            ontology=self._ontology,
            strategy=self._settings.memory.graph.conflict_strategy,
            now=self._clock(),
            cause=key,
        )
        drafts = [HANDLERS[type(c)](context, c) for c in commands]
        appended = self._log.append(
            staging.events,
            idempotency_key=key,
            receipt=msgspec.json.encode(drafts) if key is not None else None,
        )
        if appended.repeated:
            drafts = _receipt_decoder.decode(appended.receipt or b"[]")
        else:
            staging.commit()
        positions = appended.positions
        return [
            msgspec.structs.replace(d, position=positions[d.position] if d.position >= 0 else 0)
            for d in drafts
        ]

    def _refresh_policy(self) -> None:
        """Fold policy events another process may have appended since we last looked."""
        newer = self._log.read_stream(POLICY_ID, after_version=self._policy.version)
        if newer:
            self._policy = fold(evolve_policy, self._policy, (e.data for e in newer))
            self._ontology = Ontology([*DEFAULT_MAPPINGS, *self._policy.mappings])

    def _prefetch(self, commands: Sequence[Command]) -> None:
        """Load every alias, entity, slot and episode stream the batch needs in a few reads."""
        names: dict[tuple[str, str], UUID] = {}
        for command in commands:
            for name, kind in _names(command):
                with suppress(ApexmemError):  # bad names are reported when the command runs
                    entity_type, _ = resolve_entity_type(kind)
                    canonical = canonical_name("name", name)
                    names[(name, kind)] = alias_id(entity_type, canonical)
        load_states(self._log, self._cache, "alias", names.values())
        owners = {key: self._owner(key, alias) for key, alias in names.items()}
        load_states(self._log, self._cache, "entity", owners.values())
        slots = [
            slot
            for c in commands
            if isinstance(c, AssertFact) and (slot := self._planned_slot(c, owners)) is not None
        ]
        load_states(self._log, self._cache, "slot", slots)
        episodes = [
            episode_id(c.episode)
            for c in commands
            if isinstance(c, RecordMessage) and c.episode is not None
        ]
        load_states(self._log, self._cache, "episode", episodes)

    def _owner(self, key: tuple[str, str], alias: UUID) -> UUID:
        """The entity a name resolves to now, or the id it would be created with."""
        state = self._cache.get(alias)
        if isinstance(state, AliasState) and state.entity_id is not None:
            return state.entity_id
        entity_type, _ = resolve_entity_type(key[1])
        return entity_id(entity_type, canonical_name("name", key[0]))

    def _planned_slot(
        self, command: AssertFact, owners: dict[tuple[str, str], UUID]
    ) -> UUID | None:
        subject = owners.get((command.subject, command.subject_type))
        target = owners.get((command.object, command.object_type)) if command.object else None
        if subject is None or (command.object is not None and target is None):
            return None
        try:
            relation = self._ontology.resolve(normalize_relation("relation", command.relation))
            edge_type = parse_edge_type(command.edge_type)
        except ApexmemError:
            return None
        value = clean(command.value) if command.value is not None else None
        return slot_of(relation, subject, edge_type, target, value)

    def reset(self) -> None:
        """Forget every cached state (after another process rewrote history, say)."""
        self._cache = StateCache()
        self._policy = PolicyState()
        self._ontology = Ontology()


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
