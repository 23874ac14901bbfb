"""The Memory facade: the write path, the audit path and chain verification over one directory."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from uuid import UUID

from apexmem.config import EVENTS_FILE, home, load_settings
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
    build,
)
from apexmem.domain.identities import alias_id
from apexmem.domain.names import canonical_name
from apexmem.domain.settings import Settings
from apexmem.domain.types import resolve_entity_type
from apexmem.events.errors import NotFoundError, ValidationError
from apexmem.events.log import EventLog, RecordedEvent
from apexmem.logs import get_logger
from apexmem.replay.audit import HistoryEntry, history_of
from apexmem.replay.snapshot import FactView, Snapshot, snapshot
from apexmem.replay.verify import VerifyReport, verify
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
from apexmem.writer import Writer

__all__ = ["Memory"]

R = TypeVar("R")

_logger = get_logger()


class Memory:
    """A temporal knowledge-graph memory stored in one directory; open with `Memory.open`."""

    def __init__(
        self, directory: Path, *, settings: Settings, clock: Callable[[], datetime]
    ) -> None:
        self.directory = directory
        self.settings = settings
        self.log = EventLog(
            directory / EVENTS_FILE, synchronous=settings.memory.log.synchronous, clock=clock
        )
        self._writer = Writer(self.log, settings, clock)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        settings: Settings | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> Memory:
        """Open (creating if absent) the memory in `path`, `$APEXMEM_HOME` or `~/.apexmem`."""
        directory = home(path)
        directory.mkdir(parents=True, exist_ok=True)
        chosen = settings if settings is not None else load_settings(directory)
        memory = cls(directory, settings=chosen, clock=clock or (lambda: datetime.now(UTC)))
        _logger.debug("memory.opened", directory=str(directory))
        return memory

    def close(self) -> None:
        """Close the log's connections."""
        self.log.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # Writes ------------------------------------------------------------------------------

    def execute(
        self, commands: Sequence[Command], *, idempotency_key: str | None = None
    ) -> list[Result]:
        """Apply any mix of commands as one atomic append; one result per command."""
        return self._writer.execute(commands, idempotency_key=idempotency_key)

    def assert_fact(self, *, idempotency_key: str | None = None, **fields: Any) -> FactRef:
        """Assert one fact (see AssertFact for the fields); returns what became of it."""
        [result] = self.execute([build(AssertFact, fields)], idempotency_key=idempotency_key)
        assert isinstance(result, FactRef)
        return result

    def assert_facts(
        self, facts: Iterable[Mapping[str, Any] | AssertFact], *, idempotency_key: str | None = None
    ) -> list[FactRef]:
        """Assert many facts in one atomic append; one result per fact, in order."""
        commands = [f if isinstance(f, AssertFact) else _indexed(i, f) for i, f in enumerate(facts)]
        try:
            results = self.execute(commands, idempotency_key=idempotency_key)
        except ValidationError as e:
            if not e.field.startswith("["):
                raise
            raise ValidationError(f"facts{e.field}", e.value, e.rule) from e
        return [r for r in results if isinstance(r, FactRef)]

    def observe_entity(self, **fields: Any) -> EntityRef:
        """Make sure an entity exists (optionally with a new summary)."""
        return _one(self.execute([build(ObserveEntity, fields)]), EntityRef)

    def add_alias(self, **fields: Any) -> AliasRef:
        """Claim another name for an entity of the same type; the first claim wins."""
        return _one(self.execute([build(AddAlias, fields)]), AliasRef)

    def retract(
        self,
        fact_id: UUID | str,
        *,
        valid_until: datetime | None = None,
        reason: str = "retracted",
        actor: str | None = None,
    ) -> RetractRef:
        """End a fact version at `valid_until`, or withdraw it as never true when omitted."""
        fields = {
            "fact_id": str(fact_id),
            "valid_until": valid_until,
            "reason": reason,
            "actor": actor,
        }
        return _one(self.execute([build(RetractFact, fields)]), RetractRef)

    def record_message(self, **fields: Any) -> MessageRef:
        """Store one message of a conversation (`episode`) verbatim."""
        return _one(self.execute([build(RecordMessage, fields)]), MessageRef)

    def merge(self, **fields: Any) -> MergeRef:
        """Merge an entity forward into another of the same type; its names keep resolving."""
        return _one(self.execute([build(MergeEntities, fields)]), MergeRef)

    def set_decay_rate(self, edge_type: str, rate: float, *, actor: str | None = None) -> PolicyRef:
        """Set the confidence decay rate (per day) of one edge type."""
        fields = {"edge_type": edge_type, "rate": rate, "actor": actor}
        return _one(self.execute([build(SetDecayRate, fields)]), PolicyRef)

    def map_relation(self, **fields: Any) -> PolicyRef:
        """Teach the ontology a canonical relation, its aliases and cardinality."""
        return _one(self.execute([build(MapRelation, fields)]), PolicyRef)

    # Audit -------------------------------------------------------------------------------

    def history(
        self,
        *,
        fact: UUID | str | None = None,
        entity: str | None = None,
        entity_type: str = "concept",
        slot: UUID | str | None = None,
    ) -> list[HistoryEntry]:
        """Every event of a fact's slot, a slot, or an entity's own stream, oldest first."""
        if sum(x is not None for x in (fact, entity, slot)) != 1:
            raise ValidationError("history", None, "needs exactly one of fact, entity or slot")
        if fact is not None:
            found = self.log.find(f"fact:{_uuid('fact', fact)}")
            if found is None:
                raise NotFoundError(f"fact: no fact {fact} in this memory")
            return history_of(self.log, [found.stream_id])
        if slot is not None:
            return history_of(self.log, [_uuid("slot", slot)])
        assert entity is not None
        return history_of(self.log, self._entity_streams(entity, entity_type))

    def _entity_streams(self, name: str, kind: str) -> list[UUID]:
        entity_type, _ = resolve_entity_type(kind)
        canonical = canonical_name("entity", name)
        claim = self.log.read_stream(alias_id(entity_type, canonical))
        if not claim:
            raise NotFoundError(f"entity: no {entity_type} is named {name!r}")
        owner: UUID = claim[0].data.entity_id
        return [owner, alias_id(entity_type, canonical)]

    def events(
        self, *, start: int = 1, stop: int | None = None, tags: Sequence[str] = ()
    ) -> Iterator[RecordedEvent]:
        """Events of the log in position order, optionally by tag."""
        return self.log.read(start=start, stop=stop, tags=tags)

    def snapshot(self, *, until: int | None = None) -> Snapshot:
        """Names and every fact version folded from the log (a full replay; O(log))."""
        return snapshot(self.log, until=until)

    def current_facts(self) -> list[FactView]:
        """Facts believed now, by a full replay of the log."""
        return self.snapshot().current()

    def verify(self) -> VerifyReport:
        """Recompute the hash chain: ok, events checked, and the first bad position if any."""
        return verify(self.log)


def _indexed(index: int, fields: Mapping[str, Any]) -> AssertFact:
    try:
        return build(AssertFact, fields)
    except ValidationError as e:
        raise ValidationError(f"facts[{index}].{e.field}", e.value, e.rule) from e


def _one(results: list[Result], kind: type[R]) -> R:
    [result] = results
    assert isinstance(result, kind)
    return result


def _uuid(field: str, value: UUID | str) -> UUID:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(value)
    except ValueError as e:
        raise ValidationError(field, value, "is not a UUID") from e
