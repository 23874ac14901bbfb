"""A-MEM note linking on a Memory: `similar_to` facts between entities whose names are close.

A pass looks at the entities first seen since the previous pass and up to the vectors read
model's position (so the index holds every entity the pass could pair them with). Each is
compared with its `top_k` nearest entities (merges followed, itself left out); pairs at or
above `[memory.graph.note_linking] similarity_threshold` become `similar_to` facts, subject
the smaller id, semantic, with the cosine as confidence. Then a `notes-linked.v1` event
records where the pass stopped. The facts and that event are the verdicts: replay and
rebuild never embed. Facts repeated by a later pass are reinforcements, never duplicates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final
from uuid import UUID, uuid5

import msgspec

from apexmem.domain.commands import AssertFact, Command
from apexmem.domain.identities import NS
from apexmem.domain.settings import Settings
from apexmem.domain.state import EntityState
from apexmem.events.entity import EntityObserved
from apexmem.events.errors import ApexmemError, ConcurrencyError
from apexmem.events.log import EventLog, NewEvent
from apexmem.events.similarity import NotesLinked
from apexmem.projections.streams import evolve_entity, fold
from apexmem.readmodels import ReadModelStore, tracked_position
from apexmem.readmodels.vectors import VECTORS
from apexmem.service.logs import get_logger
from apexmem.service.resolution import entity_text
from apexmem.service.results import Result
from apexmem.service.similarity import Similarity

__all__ = ["LINKING_ID", "SIMILAR_TO", "Linking", "NoteLinking"]

LINKING_ID: Final = uuid5(NS, "note-linking")
"""The stream of `notes-linked.v1` events."""
SIMILAR_TO: Final = "similar_to"
_OBSERVED: Final = ("entity-observed.v1",)
_MAX_MERGE_CHAIN: Final = 32
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


class _Pass(msgspec.Struct, frozen=True, kw_only=True):
    """One attempt at a pass: what it did, and the mark to append (None: nothing to record)."""

    done: Linking
    mark: NewEvent | None
    linked: int
    """The position of the last entity linked so far, this attempt's included."""


class NoteLinking:
    """Note linking, mixed into Memory (it brings the attributes)."""

    log: EventLog
    store: ReadModelStore
    settings: Settings
    similarity: Similarity | None
    read_only: str | None
    _ready: Callable[[], None]
    execute: Callable[..., list[Result]]
    _linking: bool = False

    def link_notes(self, *, actor: str | None = None) -> Linking:
        """Link each entity first seen since the last pass to its similar entities.

        Runs whether or not `[memory.graph.note_linking] enabled` (which runs it after
        every write); needs `[memory.vectors] enabled`. When another pass records where it
        stopped first, this one starts again from there (up to `[memory.log] write_retries`
        times): what that pass linked is not linked again.
        """
        if self.similarity is None:
            raise ApexmemError("note linking needs vectors: set [memory.vectors] enabled = true")
        if self.read_only is not None:
            raise ApexmemError(f"this memory is read-only: {self.read_only}")
        retries = self.settings.memory.log.write_retries
        linked = 0  # where this call's entities are linked up to, by an attempt that lost
        for tried in range(retries + 1):
            decided = self._link_pass(actor, linked)
            if decided.mark is None:
                return decided.done
            try:
                self.log.append([decided.mark])
            except ConcurrencyError:
                _logger.info("notes.link_conflicted", attempt=tried + 1, retries=retries)
                if tried == retries:
                    raise
                linked = decided.linked
                continue
            self._ready()
            _logger.info("notes.linked", **msgspec.structs.asdict(decided.done))
            return decided.done
        raise AssertionError("unreachable")

    def _link_pass(self, actor: str | None, linked: int) -> _Pass:
        """Link the entities first seen since the last recorded pass, but for those up to
        position `linked` (an earlier attempt of this call linked them), and return the mark
        that records where this pass stopped."""
        assert self.similarity is not None
        self._ready()
        marks = self.log.read_stream(LINKING_ID)
        start = _last_through(marks)
        with self.store.read() as connection:
            through = tracked_position(connection, VECTORS)
        nothing = _Pass(done=Linking(entities=0, links=0, through=start), mark=None, linked=linked)
        if through <= start:
            return nothing
        fresh = _fresh(self.log, start, through)
        if not fresh and through - start < _QUIET_SPAN:
            return nothing  # nothing to record yet
        commands = self._links([data for position, data in fresh if position > linked], actor)
        last = fresh[-1][0] if fresh else start
        if commands:
            # Keyed by the entities linked, not by how far the index had got: a pass racing
            # this one from the same mark links the same entities, and its facts are these.
            self.execute(commands, idempotency_key=f"note-linking:{start}:{last}")
        settings = self.settings.memory.graph.note_linking
        mark = NotesLinked(
            through=through,
            entities=len(fresh),
            links=len(commands),
            threshold=settings.similarity_threshold,
            model=self.similarity.embedder.name,
        )
        return _Pass(
            done=Linking(entities=len(fresh), links=len(commands), through=through),
            mark=NewEvent(stream_id=LINKING_ID, version=len(marks) + 1, data=mark, actor=actor),
            linked=max(linked, last),
        )

    def _link_after_write(self) -> None:
        """The automatic pass of `note_linking.enabled` after a write (never nested in its own
        writes); a failure is logged, never raised: the write is already in the log."""
        if self._linking:
            return
        self._linking = True
        try:
            self.link_notes()
        except Exception as e:  # the write itself is in: a failed pass is the next one's
            _logger.warning("notes.link_failed", error=repr(e))
        finally:
            self._linking = False

    def _links(self, fresh: Sequence[EntityObserved], actor: str | None) -> list[Command]:
        assert self.similarity is not None
        settings = self.settings.memory.graph.note_linking
        states = _States(self.log)
        pairs: dict[tuple[int, int], float] = {}
        for observed in fresh:
            own = states.followed(observed.entity_id)
            if own.entity_id != observed.entity_id or own.archived:
                continue  # merged away or archived: its target links for it
            vector = self.similarity.embedder.embed([entity_text(observed.name, observed.summary)])
            near = self.similarity.index.nearest("entity", vector[0], settings.top_k + 1)
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
        return [_similar_to(states, a, b, s, actor) for (a, b), s in sorted(pairs.items())]


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


def _fresh(log: EventLog, start: int, through: int) -> list[tuple[int, EntityObserved]]:
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

    def __init__(self, log: EventLog) -> None:
        self._log = log
        self._held: dict[int, EntityState] = {}

    def followed(self, entity: UUID) -> EntityState:
        for _ in range(_MAX_MERGE_CHAIN):
            state = self._state(entity)
            if state.merged_into is None:
                return state
            entity = state.merged_into
        return EntityState()

    def _state(self, entity: UUID) -> EntityState:
        held = self._held.get(entity.int)
        if held is None:
            events = self._log.read_stream(entity)
            held = self._held[entity.int] = fold(
                evolve_entity, EntityState(), (e.data for e in events)
            )
        return held
