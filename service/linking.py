"""A-MEM note linking on a Memory: `similar_to` facts between entities whose names are close.

A pass looks at the entities first seen since the previous pass and up to the vectors read
model's position (so the index holds every entity the pass could pair them with). Each is
compared with its `top_k` nearest entities (merges followed, itself left out); pairs at or
above `[memory.graph.note_linking] similarity_threshold` become `similar_to` facts, subject
the smaller id, semantic, with the cosine as confidence. Then a `notes-linked.v1` event
records where the pass stopped. The facts and that event are the verdicts: replay and
rebuild never embed. Facts repeated by a later pass are reinforcements, never duplicates.

A pass is bounded by `timeout_secs`: once that has passed it stops after the entity it is
on (always at least one) and records that it looked up to just before the next, which the
next pass takes up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import monotonic
from typing import Final
from uuid import UUID, uuid5

import msgspec

from apexmem.domain.commands import AssertFact, Command
from apexmem.domain.embedding import entity_text
from apexmem.domain.identities import NS
from apexmem.domain.merges import followed
from apexmem.domain.settings import Settings
from apexmem.domain.state import EntityState
from apexmem.events.entity import EntityObserved
from apexmem.events.envelope import AppendResult
from apexmem.events.errors import ApexmemError, ConcurrencyError
from apexmem.events.ports import LockedLog, Log
from apexmem.events.similarity import NotesLinked
from apexmem.projections.streams import evolve_entity, fold
from apexmem.readmodels import ReadModels, tracked_position
from apexmem.readmodels.vectors import VECTORS
from apexmem.service.logs import get_logger
from apexmem.service.pipeline import Append, Pipeline, Settled, Versions
from apexmem.service.similarity import Similarity
from apexmem.service.writer import COMMANDS, Batch, Writer

__all__ = ["LINKING", "LINKING_ID", "SIMILAR_TO", "Linking", "NoteLinker"]

LINKING_ID: Final = uuid5(NS, "note-linking")
"""The stream of `notes-linked.v1` events."""
SIMILAR_TO: Final = "similar_to"
LINKING: Final = "note-linking"
"""The kind of operation a pass is: its own links trigger no further pass."""
_OBSERVED: Final = ("entity-observed.v1",)
_QUIET_SPAN: Final = 1_000
"""Positions without a new entity after which a pass still records where it stopped (so
later passes need not read them again)."""

_logger = get_logger()


class Linking(msgspec.Struct, frozen=True, kw_only=True):
    """What one note-linking pass did."""

    entities: int
    """Entities first seen since the previous pass (those merged or archived since are
    looked at but not linked)."""
    links: int
    """`similar_to` facts it asserted (new or reinforced)."""
    through: int
    """The log position it looked up to; the next pass starts after it."""


class NoteLinker:
    """Note linking passes; a post-commit policy after writes when `note_linking.enabled`."""

    after: frozenset[str] = frozenset({COMMANDS})
    """The operations after which the automatic pass runs (never after its own writes)."""

    def __init__(
        self,
        pipeline: Pipeline,
        writer: Writer,
        *,
        log: Log,
        store: ReadModels,
        settings: Settings,
        similarity: Similarity | None,
        ready: Callable[[], None],
    ) -> None:
        self._pipeline = pipeline
        self._writer = writer
        self._log = log
        self._store = store
        self._settings = settings
        self._similarity = similarity
        self._ready = ready
        self.clock: Callable[[], float] = monotonic
        """Seconds, for the `timeout_secs` bound of a pass."""

    def link_notes(self, *, actor: str | None = None) -> Linking:
        """Link each entity first seen since the last pass to its similar entities.

        Runs whether or not `[memory.graph.note_linking] enabled` (which runs it after
        every write); needs `[memory.vectors] enabled`. The links and the mark of where
        the pass stopped are one append: a pass racing another from the same mark conflicts
        and starts again from the mark the other recorded, so nothing is linked twice.
        """
        if self._similarity is None:
            raise ApexmemError("note linking needs vectors: set [memory.vectors] enabled = true")
        done = self._pipeline.run(LINKING, lambda tried: self._pass(actor, renew=tried > 0))
        if done.links or done.entities:
            _logger.info("notes.linked", **msgspec.structs.asdict(done))
        return done

    def __call__(self) -> None:
        """The automatic pass after a write; a failure is logged, never raised: the write is
        already in the log, and the next pass takes up what this one left."""
        try:
            self.link_notes()
        except Exception as e:
            _logger.warning("notes.link_failed", error=repr(e))

    def _pass(self, actor: str | None, *, renew: bool) -> _Pass | Settled[Linking]:
        """One attempt: the entities first seen since the last recorded pass, their links,
        and the mark that records where this pass stopped."""
        similarity = self._similarity
        assert similarity is not None
        self._ready()
        marks = self._log.read_stream(LINKING_ID)
        start = _last_through(marks)
        with self._store.read() as connection:
            through = tracked_position(connection, VECTORS)
        nothing = Settled(Linking(entities=0, links=0, through=start))
        if through <= start:
            return nothing
        fresh = _fresh(self._log, start, through)
        if not fresh and through - start < _QUIET_SPAN:
            return nothing  # nothing to record yet
        settings = self._settings.memory.graph.note_linking
        commands, seen = self._links([data for _, data in fresh], actor)
        if seen < len(fresh):  # out of time: the next pass starts at the first one left
            through = fresh[seen][0] - 1
            fresh = fresh[:seen]
        mark = NotesLinked(
            through=through,
            entities=len(fresh),
            links=len(commands),
            threshold=settings.similarity_threshold,
            model=similarity.embedder.name,
        )
        event = Versions.after({LINKING_ID: marks}, actor=actor).event(LINKING_ID, mark)
        return _Pass(
            Linking(entities=len(fresh), links=len(commands), through=through),
            len(marks),
            self._writer.batch(commands, fresh=renew, extra=[event]),
        )

    def _links(
        self, fresh: Sequence[EntityObserved], actor: str | None
    ) -> tuple[list[Command], int]:
        """The links of `fresh` entities, and how many were looked at before the time ran
        out (all of them, or at least one)."""
        similarity = self._similarity
        assert similarity is not None
        settings = self._settings.memory.graph.note_linking
        deadline = self.clock() + settings.timeout_secs
        states = _States(self._log)
        pairs: dict[tuple[int, int], float] = {}
        seen = 0
        for observed in fresh:
            if seen and self.clock() >= deadline:
                break
            seen += 1
            own = states.followed(observed.entity_id)
            if own.entity_id != observed.entity_id or own.archived:
                continue  # merged away or archived: its target links for it
            vector = similarity.embedder.embed([entity_text(observed.name, observed.summary)])
            near = similarity.index.nearest("entity", vector[0], settings.top_k + 1)
            kept = 0
            for item, score in near:
                if score < settings.similarity_threshold or kept == settings.top_k:
                    break
                other = states.followed(item)
                if other.entity_id in (None, observed.entity_id) or other.archived:
                    continue
                assert other.entity_id is not None
                key = tuple(sorted((observed.entity_id.int, other.entity_id.int)))
                pairs[(key[0], key[1])] = max(score, pairs.get((key[0], key[1]), -1.0))
                kept += 1
        links: list[Command] = [
            _similar_to(states, a, b, s, actor) for (a, b), s in sorted(pairs.items())
        ]
        return links, seen


class _Pass:
    """One attempt at a pass: its links and its mark, as one batch."""

    def __init__(self, done: Linking, marks: int, batch: Batch) -> None:
        self.done = done
        self._marks = marks
        self._batch = batch

    def decide(self, log: LockedLog) -> Append:
        if len(log.read_stream(LINKING_ID)) != self._marks:
            raise ConcurrencyError("another note-linking pass recorded where it stopped first")
        return self._batch.decide(log)

    def finish(self, appended: AppendResult | None) -> Linking:
        self._batch.finish(appended)
        return self.done

    def conflicted(self) -> None:
        self._batch.conflicted()


def _similar_to(states: _States, a: int, b: int, score: float, actor: str | None) -> AssertFact:
    first, second = states.followed(UUID(int=a)), states.followed(UUID(int=b))
    assert first.canonical_name is not None and second.canonical_name is not None
    confidence = max(0.0, min(1.0, score))
    return AssertFact(
        subject=first.canonical_name,
        subject_type=first.entity_type or "concept",
        relation=SIMILAR_TO,
        object=second.canonical_name,
        object_type=second.entity_type or "concept",
        edge_type="semantic",
        fact=f"Semantically similar entities (score: {confidence:.3f})",
        confidence=confidence,
        actor=actor,
    )


def _fresh(log: Log, start: int, through: int) -> list[tuple[int, EntityObserved]]:
    """The entities first seen after `start` up to `through`, with their positions."""
    return [
        (e.position, e.data)
        for e in log.read(start=start + 1, stop=through, tags=_OBSERVED)
        if e.version == 1 and isinstance(e.data, EntityObserved)
    ]


def _last_through(marks: Sequence[object]) -> int:
    through = 0
    for mark in marks:
        data = getattr(mark, "data", None)
        if isinstance(data, NotesLinked):
            through = max(through, data.through)
    return through


class _States:
    """Entity streams folded from the log, memoized for one pass."""

    def __init__(self, log: Log) -> None:
        self._log = log
        self._held: dict[int, EntityState] = {}

    def followed(self, entity: UUID) -> EntityState:
        state = self._state(followed(entity, lambda e: self._state(e).merged_into))
        return state if state.merged_into is None else EntityState()

    def _state(self, entity: UUID) -> EntityState:
        held = self._held.get(entity.int)
        if held is None:
            events = self._log.read_stream(entity)
            held = self._held[entity.int] = fold(
                evolve_entity, EntityState(), (e.data for e in events)
            )
        return held
