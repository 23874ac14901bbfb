"""The projection set: graph, vectors and FAISS index kept from one log, wired once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from time import monotonic
from typing import Final

from sqlalchemy import Connection

from apexmem.domain.embedding import Embedder
from apexmem.domain.settings import Settings
from apexmem.events.envelope import RecordedEvent
from apexmem.events.errors import ApexmemError, DiskFullError
from apexmem.events.ports import Log
from apexmem.events.sqlite import is_damaged
from apexmem.readmodels.ports import ReadModels
from apexmem.readmodels.sources import chain_at, forget_chains
from apexmem.readmodels.store import tracked_position, tracked_positions
from apexmem.readmodels.vector_index import VectorIndex
from apexmem.readmodels.vectors import (
    VectorProjection,
    models_in_use,
    reset_vector_items,
    vector_metadata,
)
from apexmem.replay.runner import CatchUp, Progress, Runner, catch_up_together, read_check

__all__ = ["SAVE_EVERY_S", "CaughtUp", "Projections", "unprojected"]

CaughtUp = Callable[[str, int], None]
"""Told by a follower after each catch-up: (projection name, position reached)."""

SAVE_EVERY_S: Final = 60.0
"""How often a follower saves the FAISS index file when it moved (it is saved on close too)."""


def unprojected(
    log: Log, connection: Connection, projection: str, *, tags: Sequence[str] = ()
) -> Iterator[RecordedEvent]:
    """The events (of `tags`) past the position `projection` has applied, as read in
    `connection`: what its read model does not show yet. The position is read now, the
    log when the events are iterated."""
    return log.read(start=tracked_position(connection, projection) + 1, tags=tags)


class Projections:
    """The read models kept from one log: the graph always, the vectors and their FAISS
    index when an embedder is given (`[memory.vectors] enabled`)."""

    def __init__(
        self,
        log: Log,
        store: ReadModels,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        on_discarded: Callable[[Path, str], None] | None = None,
    ) -> None:
        """`on_discarded(path, why)` is told when a damaged FAISS index file is deleted to
        be rebuilt from the SQL vectors."""
        self._log = log
        self.store = store
        self._inline = settings.memory.projection.inline is not False  # unset: on
        batch_size = settings.memory.projection.batch_size
        self.graph = Runner(log, store, batch_size=batch_size)
        self.embedder = embedder
        self.vectors: Runner | None = None
        self.index: VectorIndex | None = None
        self.replaced_models: list[str] = []
        """The models whose vectors were dropped on opening, to embed again with this one."""
        if embedder is not None:
            _lay_out_vectors(store)
            self.vectors = Runner(
                log, store, batch_size=batch_size, projection=VectorProjection(embedder)
            )
            self.index = VectorIndex(
                store,
                model=embedder.name,
                dimension=embedder.dimension,
                hnsw_threshold=settings.memory.vectors.hnsw_threshold,
                on_discarded=on_discarded,
            )
            self._forget_other_models(embedder.name)
        self._runners: Final = [r for r in (self.graph, self.vectors) if r is not None]
        self.reprojected: str | None = self.follow_log()
        """Why the read models were dropped on opening, to project again (another log's)."""

    def from_other_log(self) -> str | None:
        """Why the read models cannot have been projected from this log (a projection past
        its end, or a chain hash at a tracked position that is not the log's), or None.

        A log restored from an older copy, emptied or replaced is told apart so; read
        models projected before the chain hashes were recorded are checked for the end only.
        """
        last = self._log.last_position()
        with self.store.read() as connection:
            tracked = tracked_positions(connection, [r.projection.name for r in self._runners])
            for runner in self._runners:
                name = runner.projection.name
                position = tracked[name]
                if position > last:
                    return f"{name} is at position {position}, past the log's end ({last})"
                noted = chain_at(connection, name)
                if not position or noted is None or noted[0] != position:
                    continue
                if self._log.chains([position]).get(position) != noted[1]:
                    return (
                        f"the log's chain hash at position {position} is not the one {name} "
                        "was projected from"
                    )
        return None

    def follow_log(self) -> str | None:
        """Drop the read models when they were projected from another log (see
        `from_other_log`), to be projected again; why, or None."""
        try:
            why = self.from_other_log()
        except Exception as e:  # eventsourcing wraps SQLite's error
            if not is_damaged(e):
                raise
            return None  # a log SQLite cannot read: `verify` and the writes say so
        if why is not None:
            self.drop()
        return why

    def ready(self, *, behind: Callable[[DiskFullError], None] | None = None) -> None:
        """After a write and before a read, when projection is inline: every projection to
        the log's head, together in one transaction when they can (a follower keeps them
        otherwise).

        When each projection was seen at the head already, the next read transaction of
        this thread checks that they still are, with its first statement (`read_check`):
        no transaction of its own, and one statement for every position it reads. A
        catch-up that finds the disk full then tells `behind` instead of raising (when
        given): the read answers from the read models as far as they were projected.
        """
        if not self._inline:
            return
        until = self._log.last_position()
        check = read_check(
            self._runners, until=until, refresh=lambda: self._catch_up_inline(until, behind)
        )
        self.store.check_reads(check)
        if check is None:
            catch_up_together(self._runners, until=until)

    def _catch_up_inline(self, until: int, behind: Callable[[DiskFullError], None] | None) -> None:
        try:
            catch_up_together(self._runners, until=until)
        except DiskFullError as e:
            if behind is None:
                raise
            behind(e)

    def position(self) -> int:
        """The last log position the graph has applied."""
        return self.graph.position()

    def lag(self) -> int:
        """How many positions the graph is behind the log."""
        return self.graph.lag()

    def catch_up(self, *, progress: Progress | None = None) -> CatchUp:
        """Every projection to the log's head, the FAISS index built and saved; what the
        graph did. Read models of another log are dropped first (`follow_log`)."""
        self.reprojected = self.follow_log() or self.reprojected
        done = self.graph.catch_up(progress=progress)
        if self.vectors is not None:
            self.catch_up_vectors()
            self._vector_side()[1].save()
        return done

    def catch_up_vectors(self, *, progress: Progress | None = None) -> CatchUp:
        """The vectors to the head, the FAISS index following them in a thread of its own,
        then brought to the end: the index is built while texts are embedded, not after.

        FAISS works outside the GIL, so on two cores the index takes what the embedding
        leaves idle. Only this thread touches the index until the catch-up is done.
        """
        vectors, index = self._vector_side()
        batches = threading.Event()
        done = threading.Event()
        failed: list[BaseException] = []

        def follow() -> None:
            import faiss  # on one thread: the other core is the embedder's

            faiss.omp_set_num_threads(1)
            try:
                while not done.is_set():
                    batches.wait()
                    batches.clear()
                    index.sync()
            except BaseException as error:  # handed to the caller's thread
                failed.append(error)

        def reached(position: int, target: int) -> None:
            batches.set()
            if progress is not None:
                progress(position, target)

        import faiss

        threads = faiss.omp_get_max_threads()
        worker = threading.Thread(target=follow, name="apexmem-vector-index", daemon=True)
        worker.start()
        try:
            caught = vectors.catch_up(progress=reached)
        finally:
            done.set()
            batches.set()
            worker.join()
            faiss.omp_set_num_threads(threads)
        if failed:
            raise failed[0]
        index.sync()
        return caught

    def follow(
        self,
        *,
        should_stop: Callable[[], bool],
        progress: Progress | None = None,
        caught_up: CaughtUp | None = None,
    ) -> int:
        """Keep every projection at the head until `should_stop()`: the vectors follow the
        graph batch by batch and the FAISS index the vectors, its file saved every
        `SAVE_EVERY_S` when it moved. Returns the graph's position."""
        saved = monotonic()

        def batch(done: CatchUp) -> None:
            nonlocal saved
            if caught_up is not None:
                caught_up(self.graph.projection.name, done.position)
            if self.vectors is None:
                return
            vectors, index = self._vector_side()
            reached = vectors.catch_up()
            index.sync()
            if monotonic() - saved >= SAVE_EVERY_S:  # readers opening it find it current
                index.save()
                saved = monotonic()
            if caught_up is not None:
                caught_up(vectors.projection.name, reached.position)

        self.reprojected = self.follow_log() or self.reprojected
        if self.vectors is not None:  # vectors behind a graph that is not
            self.vectors.catch_up()
        self.graph.follow(should_stop=should_stop, progress=progress, on_batch=batch)
        return self.graph.position()

    def drop(self) -> None:
        """Drop every read model (graph and vectors) and its position; the index file too."""
        with self.store.write() as connection:
            self.store.reset(connection)
            forget_chains(connection)
            if self.vectors is not None:
                reset_vector_items(connection)
        for runner in self._runners:
            runner.forget()
        if self.index is not None:
            self.index.forget()

    def drop_vectors(self) -> None:
        """Drop the vectors' items and position (the embedding cache stays); the index file too."""
        vectors, index = self._vector_side()
        with self.store.write() as connection:
            reset_vector_items(connection)
        vectors.forget()
        index.forget()

    def rebuild(self, *, progress: Progress | None = None) -> CatchUp:
        """Drop the read models and project the whole log again (deterministic)."""
        self.drop()
        return self.catch_up(progress=progress)

    def _vector_side(self) -> tuple[Runner, VectorIndex]:
        if self.vectors is None or self.index is None:
            raise ApexmemError("vectors are disabled: set [memory.vectors] enabled = true")
        return self.vectors, self.index

    def _forget_other_models(self, model: str) -> None:
        """Items embedded by another model are projected again with this one."""
        with self.store.read() as connection:
            models = models_in_use(connection)
        if models and models != [model]:
            with self.store.write() as connection:
                reset_vector_items(connection)
            self._vector_side()[1].forget()
            self.replaced_models = models


def _lay_out_vectors(store: ReadModels) -> None:
    """Create the vectors' tables where absent. On PostgreSQL under the schema's write lock:
    processes opening a new memory together would otherwise race on the catalogue (a
    duplicate `pg_type` row fails all but one `CREATE TABLE`)."""
    if store.engine.dialect.name != "postgresql":  # SQLite lays out one writer at a time
        vector_metadata.create_all(store.engine)
        return
    with store.write() as connection:
        vector_metadata.create_all(connection)
