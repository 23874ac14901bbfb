"""The projection runner: moves the log into the read models, exactly once, in batches."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Final, Protocol

import msgspec
from sqlalchemy import Connection

from apexmem.events.envelope import RecordedEvent
from apexmem.events.ports import Log
from apexmem.projections.graph import Change, project
from apexmem.readmodels.apply import apply_changes
from apexmem.readmodels.ports import ReadModels
from apexmem.readmodels.postgres import analyze_if_grown
from apexmem.readmodels.sources import note_chain, sources_metadata
from apexmem.readmodels.store import ReadCheck, set_position, tracked_position, tracked_positions
from apexmem.readmodels.tables import GRAPH

__all__ = [
    "CatchUp",
    "GraphProjection",
    "Progress",
    "Projection",
    "Runner",
    "catch_up_together",
    "read_check",
]

Progress = Callable[[int, int], None]
"""Called after each batch with (position reached, target position)."""

_MAX_IDLE_SECS: Final = 2.0


class CatchUp(msgspec.Struct, frozen=True, kw_only=True):
    """What one catch-up did: events applied, batches committed, where the projection stands."""

    events: int
    batches: int
    position: int
    target: int


class Projection(Protocol):
    """A read model the runner keeps: its tracking name and how it applies a batch."""

    @property
    def name(self) -> str:
        """Its tracking row's name."""
        ...

    @property
    def tags(self) -> Sequence[str]:
        """The tags of the only events it applies (empty: every event); others are not read."""
        ...

    @property
    def drops_indexes(self) -> bool:
        """Whether a load into empty read models drops the secondary indexes until its end."""
        ...

    def apply(self, connection: Connection, events: Sequence[RecordedEvent]) -> None:
        """Write what `events` (in log order) change, inside the caller's transaction."""
        ...


class GraphProjection:
    """The current graph: entities, aliases, fact versions, episodes, messages."""

    name: Final = GRAPH
    tags: Final[Sequence[str]] = ()
    drops_indexes: Final = True

    def apply(self, connection: Connection, events: Sequence[RecordedEvent]) -> None:
        """Project each event and apply the changes in one go."""
        changes: list[Change] = []
        for e in events:
            changes.extend(project(e))
        apply_changes(connection, changes)


class Runner:
    """Applies the log to one projection (the current graph by default) from its tracked position.

    Each batch is read, projected and written, and the projection's new position is
    stored, in one read-model transaction: a crash loses at most the batch in flight,
    which the next run applies again from the stored position (nothing twice, nothing
    missed). Positions may have gaps; the runner never waits for `last + 1`.
    """

    def __init__(
        self,
        log: Log,
        store: ReadModels,
        *,
        batch_size: int = 25_000,
        projection: Projection | None = None,
    ) -> None:
        self._log = log
        self._store = store
        _lay_out_sources(store)  # beside the tracking rows (stores of before)
        self.projection: Projection = projection if projection is not None else GraphProjection()
        self._batch_size = batch_size
        self._seen = 0
        """The highest position this runner saw applied: below it, nothing needs a look."""

    def position(self) -> int:
        """The last log position the projection has applied."""
        with self._store.read() as connection:
            self._seen = tracked_position(connection, self.projection.name)
        return self._seen

    def forget(self) -> None:
        """The read models were dropped: look at the tracked position again."""
        self._seen = 0

    def lag(self) -> int:
        """How many positions the projection is behind the log."""
        return max(0, self._log.last_position() - self.position())

    def catch_up(
        self,
        *,
        until: int | None = None,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> CatchUp:
        """Apply every event up to `until` (default: the end of the log) not yet applied.

        `should_stop` is asked between batches; a true answer ends the catch-up early.
        """
        target = self._log.last_position() if until is None else until
        applied = batches = 0
        # A lower bound: the write transaction of each batch reads the real position.
        position = self._seen
        if position >= target:  # unless another process reset it (a rebuild killed midway)
            position = self.position()
        from_empty = (
            self.projection.drops_indexes
            and position == 0
            and target > self._batch_size
            and self.position() == 0
        )
        with self._bulk_load(from_empty):
            while position < target and not (should_stop is not None and should_stop()):
                position, count = self._apply_batch(target)
                if count is None:
                    break
                applied += count
                batches += 1
                if progress is not None:
                    progress(position, target)
        analyze_if_grown(self._store.engine, applied)
        return CatchUp(events=applied, batches=batches, position=position, target=target)

    def _apply_batch(self, target: int) -> tuple[int, int | None]:
        """Apply the next batch in one transaction: (position reached, events applied).

        The events applied are None when the projection already stood at `target`.
        """
        with self._store.write() as connection, _without_cycle_collection():
            position = self._seen = tracked_position(connection, self.projection.name)
            if position >= target:
                return position, None
            events = list(
                self._log.read(
                    start=position + 1,
                    stop=target,
                    tags=self.projection.tags,
                    limit=self._batch_size,
                )
            )
            self.projection.apply(connection, events)
            # A batch shorter than asked for reached the target: positions past the
            # last event read are gaps or events of other tags, not events still to come.
            reached = events[-1].position if len(events) == self._batch_size else target
            set_position(connection, self.projection.name, reached)
            note_chain(
                connection, self.projection.name, reached, self._log.chains([reached]).get(reached)
            )
        self._seen = reached
        return reached, len(events)

    @contextmanager
    def _bulk_load(self, from_empty: bool) -> Iterator[None]:
        """Into empty read models (a first projection, a rebuild), build the indexes at the end.

        Keeping the secondary indexes (four of them on random ids) up to date row by row,
        batch after batch, cost about as much as the rest of a catch-up together; building
        them once from the loaded rows costs a few percent. Queries stay correct meanwhile,
        only slower, and a store opened after a crash in between creates what is missing.
        """
        dropped = False
        if from_empty:
            with self._store.write() as connection:
                # Under the write lock: another runner may have applied a batch since.
                dropped = tracked_position(connection, self.projection.name) == 0
                if dropped:
                    self._store.drop_indexes(connection)
        try:
            yield
        finally:
            if dropped:
                with self._store.write() as connection:
                    self._store.create_indexes(connection)

    def follow(
        self,
        *,
        should_stop: Callable[[], bool],
        progress: Progress | None = None,
        on_batch: Callable[[CatchUp], None] | None = None,
    ) -> None:
        """Keep catching up until `should_stop()`; poll with backoff while the log is idle."""
        idle = 0.05
        while not should_stop():
            done = self.catch_up(progress=progress, should_stop=should_stop)
            if done.events:
                idle = 0.05
                if on_batch is not None:
                    on_batch(done)
                continue
            deadline = time.monotonic() + idle
            while time.monotonic() < deadline and not should_stop():
                time.sleep(min(0.05, idle))
            idle = min(idle * 2, _MAX_IDLE_SECS)


@contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """Python's cycle collector off while a batch is read, projected and written.

    A batch allocates hundreds of thousands of short-lived objects (rows, tuples, events),
    none in a cycle, all freed by reference counting; the collector still ran every few
    hundred allocations and walked the batch's live rows each time, a fifth of a catch-up's
    time. It runs again, as it would have, once the batch is written.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _still_seen(runners: Sequence[Runner]) -> bool:
    """Whether every runner's tracked position is still the one it saw: a rebuild in another
    process resets them, and one killed midway leaves them behind (one read transaction)."""
    seen = [r._seen for r in runners]
    stores = {id(r._store): r._store for r in runners}
    if len(stores) > 1:
        return [r.position() for r in runners] == seen
    with runners[0]._store.read() as connection:
        positions = tracked_positions(connection, [r.projection.name for r in runners])
    for runner in runners:
        runner._seen = positions[runner.projection.name]
    return [r._seen for r in runners] == seen


def read_check(
    runners: Sequence[Runner], *, until: int, refresh: Callable[[], None]
) -> ReadCheck | None:
    """The readiness check of several projections of one store, for the next read to make
    inside its own transaction (`ReadModels.check_reads`), when each runner saw `until`
    applied; None when one did not, or they are in several stores (then
    `catch_up_together`).

    The read reads their tracked positions in one statement: when each is still at `until`
    or past it, the read models are ready and the read goes on with the positions it read
    (the vector index's among them); when one is behind (another process reset it: a
    rebuild, maybe killed midway), `refresh` runs first, as `catch_up_together` would have.
    """
    if len({id(r._store) for r in runners}) != 1 or any(r._seen < until for r in runners):
        return None

    def current(positions: Mapping[str, int]) -> bool:
        for runner in runners:
            runner._seen = positions[runner.projection.name]
        return all(r._seen >= until for r in runners)

    return ReadCheck(tuple(r.projection.name for r in runners), current, refresh)


def catch_up_together(runners: Sequence[Runner], *, until: int) -> None:
    """Bring several projections of one store to `until`, in one transaction when they can.

    After an inline write each projection is a few events behind: one transaction, one
    read of the log and one commit then serve them all (a commit each was a fifth of the
    write's time). Each projection still applies only the events past its own tracked
    position and stores its own. A projection more than a batch behind (a first load, or
    one that was off) is left to its runner's `catch_up`, in batches. So is every one when
    a projection fails in the transaction: each then commits alone, and the one that fails
    raises, after the others committed, as when they ran one by one.
    """
    if all(r._seen >= until for r in runners) and _still_seen(runners):
        return  # as each runner's catch_up: nothing to apply, no write transaction
    together = len({id(r._store) for r in runners}) == 1
    try:
        if together and _apply_together(runners, until):
            return
    except _ApplyFailed:  # rolled back: each alone below, where the failing one raises
        pass
    for runner in runners:
        runner.catch_up(until=until)


class _ApplyFailed(Exception):
    """A projection failed inside the joint transaction, which rolled back (never escapes).

    Only this falls back to the runners one by one: a store too busy to begin a
    transaction raises at once, as a runner alone would."""


def _apply_together(runners: Sequence[Runner], until: int) -> bool:
    """Each projection's events up to `until` in one transaction; False, with nothing
    written, when one of them is more than a batch behind."""
    log, store = runners[0]._log, runners[0]._store
    with store.write() as connection:
        tracked = tracked_positions(connection, [r.projection.name for r in runners])
        positions = [tracked[r.projection.name] for r in runners]
        if any(until - p > r._batch_size for r, p in zip(runners, positions, strict=True)):
            return False
        lowest = min(positions)
        events = list(log.read(start=lowest + 1, stop=until)) if lowest < until else []
        chain = log.chains([until]).get(until)
        for runner, position in zip(runners, positions, strict=True):
            if position < until:
                tags = runner.projection.tags
                mine = [e for e in events if e.position > position and (not tags or e.tag in tags)]
                try:
                    runner.projection.apply(connection, mine)
                except Exception as error:
                    raise _ApplyFailed(runner.projection.name) from error
                set_position(connection, runner.projection.name, until)
                note_chain(connection, runner.projection.name, until, chain)
    for runner in runners:
        runner._seen = until
    analyze_if_grown(store.engine, len(events))  # inline writes' events add up
    return True


def _lay_out_sources(store: ReadModels) -> None:
    """Create the chain-hash table where absent; on PostgreSQL under the schema's write lock,
    as `replay.projections` lays out the vectors' tables: two processes opening a new memory
    at once otherwise race on the catalogue (`relation "tracked_chains" already exists`)."""
    if store.engine.dialect.name != "postgresql":
        sources_metadata.create_all(store.engine)
        return
    with store.write() as connection:
        sources_metadata.create_all(connection)
