"""Forget on request: erase an entity or a conversation from the log and every file kept.

One operation of the write path (`service.pipeline`): under the log's write lock it reads
the whole log to decide the scope (`service.erasure_scope`), blanks those records in place
and appends a `records-erased.v1` that vouches for each blanked position's chain hash, in
one transaction. After the commit the clean-up (`service.erasure_cleanup`) rebuilds the
read models and scrubs every file, so the erased bytes are nowhere on disk.

The read models keep the version of the erasure stream whose clean-up finished last: a
memory opened with a later erasure in its log finishes that clean-up first, so a process
killed in the middle of a forget leaves either nothing erased (the transaction rolled back)
or an erasure that completes at the next open, never a half-erased memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final, Protocol, runtime_checkable
from uuid import UUID, uuid5

import msgspec

from apexmem.domain.identities import alias_id, entity_id, episode_id
from apexmem.domain.names import normalize
from apexmem.domain.types import ENTITY_TYPES, parse_entity_type
from apexmem.events.base import MAX_REF_BYTES
from apexmem.events.entity import AliasClaimed, EntityMerged
from apexmem.events.envelope import AppendResult, NewEvent
from apexmem.events.erasure import Erased, RecordsErased
from apexmem.events.errors import ValidationError
from apexmem.events.ports import LockedLog, Log
from apexmem.events.sqlite import is_damaged
from apexmem.readmodels import ReadModels
from apexmem.service.erasure_cleanup import cleaned, note_cleaned
from apexmem.service.erasure_scope import Scope, entity_scope, episode_scope
from apexmem.service.logs import get_logger
from apexmem.service.pipeline import Append, Pipeline

__all__ = [
    "ERASURES",
    "ForgetReport",
    "Forgetting",
    "Target",
    "erased_entity_streams",
    "erasures_of",
]

ERASURES: Final = uuid5(UUID("6f1c2a4e-8f0b-5d3e-9a71-2b5c4d6e8f90"), "erasures")
"""The stream every erasure event is appended to."""
_logger = get_logger()


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """What a request forgets: an entity (with the ones merged into it) or an episode."""

    scope: str
    target: UUID
    entity_type: str | None = None
    conversation: str | None = None
    entities: frozenset[UUID] = frozenset()


class ForgetReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a forget did: how many records it blanked, and where its erasure event is.

    `erased` is 0 and `position` None when there was nothing left to erase (the same
    request made before: forgetting twice is a no-op).
    """

    scope: str
    target: UUID
    entity_type: str | None
    erased: int
    entities: int
    facts: int
    messages: int
    position: int | None
    recorded_at: datetime | None


class Forgetting:
    """The forget operation over one memory's log, pipeline, read models and clean-up."""

    def __init__(
        self,
        log: Log,
        pipeline: Pipeline,
        store: ReadModels,
        *,
        clean_up: Callable[[], None],
        before: Callable[[], object] = lambda: None,
    ) -> None:
        """`before` runs once the request's fields are checked, before the entity or
        episode is looked up (the facade extracts the messages still waiting: an entity
        they name is found, and nothing read out of an erased message lands after the
        erasure)."""
        self._log = log
        self._pipeline = pipeline
        self._store = store
        self._clean_up = clean_up
        self._before = before

    def forget(
        self,
        *,
        entity: str | None = None,
        entity_type: str | None = None,
        episode: str | None = None,
        reason: object = None,
        actor: object = None,
    ) -> ForgetReport:
        """Erase an entity (by name, with `entity_type` when the name is ambiguous) or a
        conversation; `reason` is required. Raises ValidationError, writing nothing, for a
        missing reason or an unknown entity or episode."""
        why = _reason(reason)
        who = _actor(actor)
        if (entity is None) == (episode is None):
            raise ValidationError(
                "forget", {"entity": entity, "episode": episode},
                "names what to forget by exactly one of entity and episode",
            )  # fmt: skip
        self._pipeline.refuse_if_read_only()
        self._before()
        target = self._entity(entity, entity_type) if entity is not None else self._episode(episode)
        attempt = _Forget(target, why, who)
        report = self._pipeline.run("forget", lambda _: attempt)
        if self.pending():
            self.finish()
        _logger.info(
            "memory.forgot", scope=target.scope, target=str(target.target),
            erased=report.erased, position=report.position,
        )  # fmt: skip
        return report

    def finish(self) -> None:
        """Rebuild the read models and scrub every file, then note the erasures done (also
        run when a memory opens with an erasure whose clean-up a stopped process left)."""
        done = self._log.read_stream(ERASURES)
        self._clean_up()
        if done:
            note_cleaned(self._store, done[-1].version)

    def pending(self) -> bool:
        """Whether an erasure in the log has not been cleaned up after (its read models
        rebuilt and its files scrubbed): the read models keep the last one that was.

        A log SQLite cannot read owes nothing here: `verify` and `recover` deal with it."""
        try:
            return bool(self._log.read_stream(ERASURES, after_version=cleaned(self._store)))
        except Exception as e:  # eventsourcing wraps SQLite's error
            if is_damaged(e):
                return False
            raise

    def _entity(self, name: str, entity_type: str | None) -> Target:
        if not isinstance(name, str) or not normalize(name):
            raise ValidationError("entity", name, "is not a name (empty after normalization)")
        types = ENTITY_TYPES if entity_type is None else (parse_entity_type(entity_type),)
        key = normalize(name)
        found = self._log.read_streams([alias_id(t, key) for t in types])
        live: dict[str, UUID] = {}
        forgotten: list[str] = []
        for t in types:
            events = found.get(alias_id(t, key), [])
            claims = [e.data for e in events if isinstance(e.data, AliasClaimed)]
            if claims:
                live[t] = self._surviving(claims[0].entity_id)
            elif events and all(isinstance(e.data, Erased) for e in events):
                forgotten.append(t)
        if len(live) > 1:
            raise ValidationError(
                "entity_type", entity_type,
                f"is needed: {name!r} names entities of types {', '.join(sorted(live))}",
            )  # fmt: skip
        if live:
            [(kind, owner)] = live.items()
            return Target(
                scope="entity", target=owner, entity_type=kind, entities=frozenset({owner})
            )
        if forgotten:  # erased before: nothing left to erase
            return Target(
                scope="entity", target=entity_id(forgotten[0], key), entity_type=forgotten[0]
            )
        raise ValidationError("entity", name, "names no entity in this memory")

    def _surviving(self, entity: UUID) -> UUID:
        """The entity a name resolves to after following merges forward."""
        seen = {entity}
        while True:
            merges = [
                e.data for e in self._log.read_stream(entity) if isinstance(e.data, EntityMerged)
            ]
            if not merges or merges[-1].into in seen:
                return entity
            entity = merges[-1].into
            seen.add(entity)

    def _episode(self, conversation: object) -> Target:
        if not isinstance(conversation, str) or not conversation:
            raise ValidationError("episode", conversation, "is not a conversation name")
        stream = episode_id(conversation)
        if not self._log.read_stream(stream):
            raise ValidationError("episode", conversation, "names no conversation in this memory")
        return Target(scope="episode", target=stream, conversation=conversation)


@runtime_checkable
class Blanking(LockedLog, Protocol):
    """A log under its write lock that can blank records (SQLite's and PostgreSQL's)."""

    def blank(self, positions: Sequence[int]) -> dict[int, tuple[bytes, bytes]]:
        """Blank these positions; the chain hash and the blanked bytes' hash of each."""
        ...


class _Forget:
    """The attempt: decide the scope under the lock, blank it, append the erasure event."""

    def __init__(self, target: Target, reason: str, actor: str | None) -> None:
        self._target = target
        self._reason = reason
        self._actor = actor
        self._scope = Scope(positions=[])

    def decide(self, log: LockedLog) -> Append:
        assert isinstance(log, Blanking), "forget needs a log that can blank records"
        target = self._target
        everything = lambda: log.read_after(0)  # noqa: E731 - read again for each pass
        if target.scope == "episode":
            assert target.conversation is not None
            self._scope = episode_scope(everything, target.target, target.conversation)
        else:
            self._scope = (
                entity_scope(everything, set(target.entities)) if target.entities else self._scope
            )
        positions = self._scope.positions
        if not positions:
            return Append()
        blanked = log.blank(positions)
        previous = log.read_stream(ERASURES)
        event = RecordsErased(
            scope="entity" if target.scope == "entity" else "episode",
            target=target.target,
            entity_type=target.entity_type,
            reason=self._reason,
            positions=positions,
            chains=[blanked[p][0].hex() for p in positions],
            blanks=[blanked[p][1].hex() for p in positions],
        )
        version = previous[-1].version + 1 if previous else 1
        new = NewEvent(stream_id=ERASURES, version=version, data=event, actor=self._actor)
        return Append(events=[new])

    def finish(self, appended: AppendResult | None) -> ForgetReport:
        scope, target = self._scope, self._target
        done = appended is not None and bool(scope.positions)
        return ForgetReport(
            scope=target.scope,
            target=target.target,
            entity_type=target.entity_type,
            erased=len(scope.positions) if done else 0,
            entities=scope.entities if done else 0,
            facts=scope.facts if done else 0,
            messages=scope.messages if done else 0,
            position=appended.positions[0] if done and appended is not None else None,
            recorded_at=appended.recorded_at if done and appended is not None else None,
        )

    def conflicted(self) -> None:
        self._scope = Scope(positions=[])


def erased_entity_streams(log: Log, name: str, entity_type: str | None) -> list[UUID]:
    """The streams of an entity forgotten by name: the name's claim streams and the entity
    streams they pointed to, when every record of them was erased (their history then
    shows that records existed and were erased, with positions and times), else []."""
    key = normalize(name) if isinstance(name, str) else ""
    if not key:
        return []
    types = ENTITY_TYPES if entity_type is None else (entity_type,)
    names = [alias_id(t, key) for t in types]
    owners = [entity_id(t, key) for t in types]
    found = log.read_streams([*names, *owners])
    return [
        stream
        for stream, events in found.items()
        if events and all(isinstance(e.data, Erased) for e in events)
    ]


def erasures_of(log: Log, targets: set[UUID]) -> list[int]:
    """The positions of the erasure events that forgot any of these streams."""
    return [
        e.position
        for e in log.read_stream(ERASURES)
        if isinstance(e.data, RecordsErased) and e.data.target in targets
    ]


def _reason(reason: object) -> str:
    if reason is None:
        raise ValidationError("reason", reason, "is required: say why this is erased")
    if not isinstance(reason, str) or not reason.strip():
        raise ValidationError("reason", reason, "is not a non-empty string")
    if len(reason.encode()) > MAX_REF_BYTES:
        raise ValidationError("reason", reason[:60], f"is longer than {MAX_REF_BYTES} bytes")
    return reason


def _actor(actor: object) -> str | None:
    if actor is None:
        return None
    if not isinstance(actor, str) or not actor or len(actor.encode()) > MAX_REF_BYTES:
        raise ValidationError("actor", actor, f"is not a string of 1 to {MAX_REF_BYTES} bytes")
    return actor
