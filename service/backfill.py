"""Extraction from stored messages on a Memory (`backfill`), every verdict recorded as events.

For each message no extractor has read, oldest first: a message the prompt-injection check
flags is only marked as read; any other is shown to the extractor with the names the
memory knows. What it finds is written through the normal write path, a chunk of messages
at a time: the entities it mentions are observed (created when new), its facts are
asserted with the message as provenance (episode = the conversation, ref = the message's
ref, actor = the extractor's name), then the message's episode records which entities it
mentioned (`entities-mentioned.v1`) and that it was read (`message-extracted.v1`). Replay
and rebuild apply those events and never call an extractor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final
from uuid import UUID

import blake3
import msgspec
from sqlalchemy import Connection

from apexmem.domain.commands import AssertFact, ObserveEntity, build
from apexmem.domain.extraction import (
    GENERIC_SPEAKERS,
    Extraction,
    Extractor,
    KnownName,
    Mention,
    Utterance,
    checked,
    recordable_name,
)
from apexmem.domain.heuristic import HeuristicExtractor
from apexmem.domain.injection import injection_verdict
from apexmem.domain.names import MIN_NAME_BYTES, normalize
from apexmem.domain.rpe import Outcome
from apexmem.events.base import Event
from apexmem.events.envelope import AppendResult, NewEvent
from apexmem.events.episode import EntitiesMentioned
from apexmem.events.errors import ApexmemError, ConcurrencyError
from apexmem.events.extraction import MessageExtracted
from apexmem.events.ports import LockedLog
from apexmem.readmodels import ReadModels
from apexmem.readmodels.extraction import (
    PendingMessage,
    known_names,
    pending_count,
    pending_messages,
    prior_turns,
    speakers,
)
from apexmem.replay.runner import Progress
from apexmem.service.arguments import checked_count
from apexmem.service.logs import get_logger
from apexmem.service.pipeline import Append, Pipeline, Versions
from apexmem.service.results import EntityRef, FactRef, Result
from apexmem.service.rpe import OPEN, Gate, GateRun, OpenRun
from apexmem.service.writer import Writer

__all__ = ["Backfill", "BackfillReport", "speaker_roles"]

_logger = get_logger()
_CHUNK: Final = 100
"""Messages extracted per write (three appends: entities, facts, verdicts)."""

_Key = tuple[str, str]
"""A mention's identity within a chunk: normalized name and entity type."""


class BackfillReport(msgspec.Struct, kw_only=True):
    """What one backfill did."""

    extractor: str
    messages: int = 0
    """Messages read (flagged and failed ones included)."""
    skipped: int = 0
    """Messages the prompt-injection check flagged: marked as read, nothing extracted."""
    gated: int = 0
    """Messages the RPE gate skipped as saying little new (`[memory.graph.rpe]`): marked as
    read with their surprise, nothing extracted."""
    failed: int = 0
    """Messages the extractor failed on, or whose facts were refused: left for the next run."""
    entities: int = 0
    """Entity mentions recorded (each entity once per message)."""
    facts: int = 0
    """Facts asserted from the messages (reinforcements of known facts included)."""
    pending: int = 0
    """Messages still unread afterwards (those past `limit`, and failed ones)."""


class _Reading(msgspec.Struct, kw_only=True):
    """One message of a chunk and what became of it so far."""

    message: PendingMessage
    flagged: str | None = None
    surprise: float | None = None
    """Set when the RPE gate skipped the message: its surprise."""
    extraction: Extraction = Extraction()
    fact_ids: list[UUID] = []


class Backfill:
    """Reads the messages not yet read with an extractor and records what it found."""

    def __init__(
        self,
        pipeline: Pipeline,
        writer: Writer,
        *,
        store: ReadModels,
        ready: Callable[[], None],
        roles: Mapping[str, str] | None = None,
        gate: Gate | None = None,
    ) -> None:
        self._pipeline = pipeline
        self._gate = gate
        """The RPE gate (`[memory.graph.rpe] enabled`), or None to read every message."""
        self._writer = writer
        self._store = store
        self._ready = ready
        self._roles = dict(roles or {})
        """Speaker roles (normalized) to the entity each stands for (`speaker_roles`)."""
        self.extractor: Extractor = HeuristicExtractor()
        """Reads messages for `backfill` (replace it to use a model); its verdicts are
        recorded."""

    def backfill(
        self,
        limit: int | None = None,
        extractor: Extractor | None = None,
        *,
        progress: Progress | None = None,
    ) -> BackfillReport:
        """Extract entities and facts from the messages not yet read, oldest first.

        At most `limit` messages (all when None); `extractor` replaces `self.extractor`
        for this run. Running it again reads nothing new: each message read is marked in
        the log. `progress(done, total)` is called after each chunk of messages.
        """
        self._pipeline.refuse_if_read_only()
        limit = _limit(limit)
        chosen = extractor if extractor is not None else self.extractor
        recordable_name("extractor.name", chosen.name)
        self._ready()
        with self._store.read() as connection:
            total = pending_count(connection)
            lexicon = _lexicon(known_names(connection), speakers(connection), self._roles)
        todo = total if limit is None else min(limit, total)
        report = BackfillReport(extractor=chosen.name)
        run = self._gate.run() if self._gate is not None else OPEN
        after = 0
        while report.messages < todo:
            with self._store.read() as connection:
                chunk = pending_messages(
                    connection, after=after, limit=min(_CHUNK, todo - report.messages)
                )
                shown = [self._shown(connection, m) for m in chunk]
            if not chunk:
                break
            after = chunk[-1].position
            self._backfill_chunk(chosen, chunk, shown, lexicon, report, run=run)
            if progress is not None:
                progress(report.messages, todo)
        with self._store.read() as connection:
            report.pending = pending_count(connection)
        _logger.info("backfill.done", **msgspec.structs.asdict(report))
        return report

    def _shown(self, connection: Connection, message: PendingMessage) -> Utterance:
        """The message as the extractor is shown it: its speaker's entity and prior turns."""
        return message.utterance(
            speaker_entity=self._roles.get(normalize(message.speaker)),
            context=prior_turns(connection, message),
        )

    def _backfill_chunk(
        self,
        extractor: Extractor,
        chunk: Sequence[PendingMessage],
        shown: Sequence[Utterance],
        lexicon: dict[str, KnownName],
        report: BackfillReport,
        *,
        run: GateRun | OpenRun,
    ) -> None:
        readings = [
            r
            for m, u in zip(chunk, shown, strict=True)
            if (r := _read(extractor, m, u, lexicon, run)) is not None
        ]
        report.messages += len(chunk)
        report.failed += len(chunk) - len(readings)
        ids = self._backfill_observe(extractor.name, readings)
        done = self._backfill_assert(extractor.name, readings, ids)
        report.failed += len(readings) - len(done)
        recorded = self._backfill_record(extractor.name, done, ids)
        for reading in recorded:
            report.skipped += reading.flagged is not None
            report.gated += reading.surprise is not None
            report.entities += len(_mentioned(reading, ids))
            report.facts += len(reading.fact_ids)

    def _backfill_observe(self, actor: str, readings: Sequence[_Reading]) -> dict[_Key, UUID]:
        """Observe every entity the chunk mentions (created when new); their ids by key."""
        first: dict[_Key, tuple[Mention, str]] = {}
        for reading in readings:
            for mention in reading.extraction.mentions:
                first.setdefault(_key(mention), (mention, reading.message.conversation))
        if not first:
            return {}
        commands = [
            build(
                ObserveEntity,
                {"name": m.name, "entity_type": m.entity_type, "episode": c, "actor": actor},
            )
            for m, c in first.values()
        ]
        key = _idempotency_key("observe", [r.message for r in readings], commands)
        results = self._writer.execute(commands, idempotency_key=key)
        return {k: _entity(r) for k, r in zip(first, results, strict=True)}

    def _backfill_assert(
        self, actor: str, readings: Sequence[_Reading], ids: dict[_Key, UUID]
    ) -> list[_Reading]:
        """Assert each message's facts (one append for the chunk, else one per message);
        returns the readings whose facts were all taken."""
        planned = [(r, _assertions(actor, r, ids)) for r in readings]
        commands = [c for _, cs in planned for c in cs]
        if not commands:
            return list(readings)
        key = _idempotency_key("assert", [r.message for r in readings], commands)
        try:
            results = iter(self._writer.execute(commands, idempotency_key=key))
        except ConcurrencyError:
            raise
        except ApexmemError as e:
            _logger.info("backfill.chunk_refused", error=str(e), messages=len(readings))
            return [r for r, cs in planned if self._backfill_one(actor, r, cs)]
        for reading, assertions in planned:
            reading.fact_ids = [_fact(next(results)) for _ in assertions]
        return list(readings)

    def _backfill_one(self, actor: str, reading: _Reading, commands: list[AssertFact]) -> bool:
        if not commands:
            return True
        key = _idempotency_key("assert", [reading.message], commands)
        try:
            reading.fact_ids = [
                _fact(r) for r in self._writer.execute(commands, idempotency_key=key)
            ]
        except ConcurrencyError:
            raise
        except ApexmemError as e:
            _logger.warning(
                "backfill.message_refused", message_id=str(reading.message.message_id), error=str(e)
            )
            return False
        return True

    def _backfill_record(
        self, actor: str, readings: Sequence[_Reading], ids: dict[_Key, UUID]
    ) -> list[_Reading]:
        """Append each message's mentions and verdict to its episode; returns the readings
        recorded (not those another backfill recorded first)."""
        return self._pipeline.run("backfill", lambda _: _Verdicts(actor, readings, ids))


class _Verdicts:
    """One attempt at recording a chunk's verdicts, decided from the episode streams under
    the write lock."""

    def __init__(self, actor: str, readings: Sequence[_Reading], ids: dict[_Key, UUID]) -> None:
        self._actor, self._readings, self._ids = actor, readings, ids
        self._recorded: list[_Reading] = []

    def decide(self, log: LockedLog) -> Append:
        actor, ids = self._actor, self._ids
        streams = list(dict.fromkeys(r.message.episode_id for r in self._readings))
        found = log.read_streams(streams)
        numbered = Versions.after(found, actor=actor)
        read = {
            e.data.message_id
            for events in found.values()
            for e in events
            if isinstance(e.data, MessageExtracted)
        }
        self._recorded = []
        events: list[NewEvent] = []
        for reading in self._readings:
            if reading.message.message_id in read:
                continue
            self._recorded.append(reading)
            episode = reading.message.conversation
            events.extend(
                numbered.event(reading.message.episode_id, data, episode=episode)
                for data in _verdict(actor, reading, ids)
            )
        return Append(events=events)

    def finish(self, appended: AppendResult | None) -> list[_Reading]:
        return self._recorded

    def conflicted(self) -> None:
        return None


def _read(
    extractor: Extractor,
    message: PendingMessage,
    shown: Utterance,
    lexicon: dict[str, KnownName],
    run: GateRun | OpenRun,
) -> _Reading | None:
    """Check, gate and extract one message; None when the extractor failed on it."""
    flagged = injection_verdict(message.text)
    if flagged is not None:
        _logger.info("backfill.flagged", message_id=str(message.message_id), rule=flagged)
        run.settle(message, Outcome.FLAGGED, lexicon)
        return _Reading(message=message, flagged=flagged)
    surprise = run.admit(message, lexicon)
    if not surprise.extract:
        _logger.info("backfill.gated", message_id=str(message.message_id), surprise=surprise.rpe)
        run.settle(message, Outcome.SKIPPED, lexicon)
        return _Reading(message=message, surprise=surprise.rpe)
    try:
        kept = checked(extractor.extract(shown, lexicon))
    except Exception as e:  # a plug-in's failure, or its malformed answer, leaves the message
        _logger.warning(
            "backfill.extractor_failed",
            extractor=extractor.name,
            message_id=str(message.message_id),
            error=repr(e),
        )
        run.settle(message, Outcome.SKIPPED, lexicon)  # unread counts as skipped in a row
        return None
    if kept.dropped:
        _logger.info(
            "backfill.dropped", message_id=str(message.message_id), dropped=list(kept.dropped)
        )
    for mention in kept.extraction.mentions:  # later messages know the names found so far
        lexicon.setdefault(normalize(mention.name), KnownName(mention.name, mention.entity_type))
    run.settle(message, Outcome.EXTRACTED, lexicon)
    return _Reading(message=message, extraction=kept.extraction)


def _limit(value: object) -> int | None:
    """`backfill`'s `limit`: None (every message) or a count."""
    return None if value is None else checked_count("limit", value)


def _lexicon(
    known: dict[str, KnownName], talking: Sequence[str], roles: Mapping[str, str]
) -> dict[str, KnownName]:
    """The names known, with every speaker a person (speakers are people, not concepts),
    a role speaker under the entity it stands for."""
    lexicon = dict(known)
    for spoken in talking:
        speaker = roles.get(normalize(spoken), spoken)
        key = normalize(speaker)
        if (key in GENERIC_SPEAKERS and speaker == spoken) or len(key.encode()) < MIN_NAME_BYTES:
            continue
        if key not in lexicon or lexicon[key].entity_type != "person":
            lexicon[key] = KnownName(speaker, "person")
    return lexicon


def speaker_roles(user_entity: str, assistant_entity: str) -> dict[str, str]:
    """Speaker roles (normalized) to the entity each stands for; an empty name maps none."""
    roles: dict[str, str] = {}
    for role, entity in (
        ("user", user_entity),
        ("human", user_entity),
        ("assistant", assistant_entity),
        ("bot", assistant_entity),
        ("agent", assistant_entity),
        ("model", assistant_entity),
    ):
        if entity.strip():
            roles[role] = entity.strip()
    return roles


def _assertions(actor: str, reading: _Reading, ids: dict[_Key, UUID]) -> list[AssertFact]:
    """The message's facts as assertions, once per (subject, relation, object, edge type)."""
    message = reading.message
    seen: set[tuple[UUID, str, UUID | str, str]] = set()
    commands = []
    for fact in reading.extraction.facts:
        subject = ids[_key(fact.subject)]
        target = ids[_key(fact.object)] if fact.object is not None else None
        identity = (subject, fact.relation, target or f"value:{fact.value}", fact.edge_type)
        if subject == target or identity in seen:  # two names of one entity
            continue
        seen.add(identity)
        fields: dict[str, Any] = {
            "subject": fact.subject.name,
            "subject_type": fact.subject.entity_type,
            "relation": fact.relation,
            "edge_type": fact.edge_type,
            "fact": fact.fact,
            "confidence": fact.confidence,
            "valid_from": fact.valid_from or message.at,
            # No observed_at: decay counts from when the memory learned the fact (now), not
            # from when it was said, so a backfilled old conversation is not born faded.
            "episode": message.conversation,
            "ref": message.ref or f"message:{message.message_id}",
            "actor": actor,
        }
        if fact.object is not None:
            fields |= {"object": fact.object.name, "object_type": fact.object.entity_type}
        else:
            fields["value"] = fact.value
        if fact.valid_until is not None:
            fields["valid_until"] = fact.valid_until
        commands.append(build(AssertFact, fields))
    return commands


def _verdict(actor: str, reading: _Reading, ids: dict[_Key, UUID]) -> list[Event]:
    message_id = reading.message.message_id
    events: list[Event] = []
    mentioned = _mentioned(reading, ids)
    if mentioned:
        events.append(EntitiesMentioned(message_id=message_id, entity_ids=mentioned))
    events.append(
        MessageExtracted(
            message_id=message_id,
            extractor=actor,
            fact_ids=list(dict.fromkeys(reading.fact_ids)),
            flagged=reading.flagged,
            surprise=reading.surprise,
        )
    )
    return events


def _mentioned(reading: _Reading, ids: dict[_Key, UUID]) -> list[UUID]:
    return list(dict.fromkeys(ids[_key(m)] for m in reading.extraction.mentions))


def _key(mention: Mention) -> _Key:
    return normalize(mention.name), mention.entity_type


def _idempotency_key(
    step: str, messages: Sequence[PendingMessage], commands: Sequence[AssertFact | ObserveEntity]
) -> str:
    """The same commands for the same messages ask the same key: a run cut short between two
    of its appends, run again, writes nothing twice (and different commands never reuse the
    results of others)."""
    hasher = blake3.blake3(b"".join(m.message_id.bytes for m in messages))
    hasher.update(msgspec.json.encode(commands))
    return f"apexmem:backfill:{step}:{hasher.hexdigest()[:40]}"


def _entity(result: Result) -> UUID:
    assert isinstance(result, EntityRef)
    return result.entity_id


def _fact(result: Result) -> UUID:
    assert isinstance(result, FactRef)
    return result.fact_id
