"""The write path: validate, load stream states, decide, append atomically, retry on conflict."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final

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
from apexmem.domain.identities import POLICY_ID, alias_id, episode_id
from apexmem.domain.names import canonical_name
from apexmem.domain.ontology import DEFAULT_MAPPINGS, Ontology
from apexmem.domain.settings import Settings
from apexmem.domain.state import PolicyState
from apexmem.domain.types import resolve_entity_type
from apexmem.events.errors import ConcurrencyError
from apexmem.events.log import EventLog
from apexmem.handlers import HANDLERS, Context
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
        """Load every alias, entity and episode stream the batch will need in a few reads."""
        aliases: list[Any] = []
        episodes = []
        for command in commands:
            for name, kind in _names(command):
                entity_type, _ = resolve_entity_type(kind)
                try:
                    aliases.append(alias_id(entity_type, canonical_name("name", name)))
                except Exception:
                    continue
            if isinstance(command, RecordMessage) and command.episode is not None:
                episodes.append(episode_id(command.episode))
        load_states(self._log, self._cache, "alias", aliases)
        load_states(self._log, self._cache, "episode", episodes)
        entities = [s.entity_id for a in aliases if (s := self._cache.get(a)) and s.entity_id]  # type: ignore[attr-defined]
        load_states(self._log, self._cache, "entity", entities)

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
