"""The facade's vector side: the embedder, the vectors projection's runner and the FAISS index."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final, get_args
from uuid import UUID

import msgspec
from sqlalchemy import Connection

from apexmem.domain.embedding import Embedder
from apexmem.domain.settings import Settings
from apexmem.events.errors import ValidationError
from apexmem.events.log import EventLog
from apexmem.projections.vectors import KINDS, Kind
from apexmem.readmodels.moment import NOW, Lens, Moment
from apexmem.readmodels.recall import visible_facts, visible_messages
from apexmem.readmodels.search import visible_entities
from apexmem.readmodels.store import ReadModelStore
from apexmem.readmodels.vector_index import VectorIndex
from apexmem.readmodels.vectors import (
    VectorProjection,
    brute_force,
    models_in_use,
    reset_vector_items,
    vector_metadata,
)
from apexmem.replay.runner import CatchUp, Progress, Runner
from apexmem.service.arguments import checked_count, checked_text
from apexmem.service.logs import get_logger
from apexmem.service.nearest import Rounds, nearest_shown

__all__ = ["Similar", "Similarity"]

_logger = get_logger()
_KIND_NAMES: Final = ", ".join(get_args(Kind))


class Similar(msgspec.Struct, frozen=True, kw_only=True):
    """An item close to the query: its kind, id and cosine similarity."""

    kind: Kind
    item_id: UUID
    score: float


class Similarity:
    """Embeds what the log says into the read models and answers nearest-item questions."""

    def __init__(
        self, log: EventLog, store: ReadModelStore, settings: Settings, embedder: Embedder
    ) -> None:
        self.embedder = embedder
        vectors = settings.memory.vectors
        vector_metadata.create_all(store.engine)
        self.runner = Runner(
            log,
            store,
            batch_size=settings.memory.projection.batch_size,
            projection=VectorProjection(embedder),
        )
        self.index = VectorIndex(
            store,
            model=embedder.name,
            dimension=embedder.dimension,
            hnsw_threshold=vectors.hnsw_threshold,
        )
        self._store = store
        self._forget_other_models()

    def catch_up(self, *, until: int | None = None) -> CatchUp:
        """Embed every event up to `until` (the end of the log) the projection has not seen."""
        return self.runner.catch_up(until=until)

    def catch_up_indexed(self, *, progress: Progress | None = None) -> CatchUp:
        """`catch_up`, with the FAISS index following it in a thread of its own, then
        brought to the end: the index is built while texts are embedded, not after.

        FAISS works outside the GIL, so on two cores the index takes what the embedding
        leaves idle. Only this thread touches the index until the catch-up is done.
        """
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
                    self.index.sync()
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
            caught = self.runner.catch_up(progress=reached)
        finally:
            done.set()
            batches.set()
            worker.join()
            faiss.omp_set_num_threads(threads)
        if failed:
            raise failed[0]
        self.index.sync()
        return caught

    def reset(self, connection: Connection) -> None:
        """Drop the items and their position inside the caller's transaction (the cache stays)."""
        reset_vector_items(connection)
        self.runner.forget()
        self.index.forget()

    def similar(self, text: str, *, kind: str, k: int, moment: Moment = NOW) -> list[Similar]:
        """The `k` items of `kind` current at `moment` nearest to `text` by the FAISS index.

        Current: a fact version believed then (not superseded, ended or withdrawn); an
        entity known and not archived, an entity merged away counting as the one it was
        merged into; a message recorded (and said) by then.
        """
        chosen, size = _kind(kind), checked_count("k", k)
        query = self.embedder.embed([checked_text("text", text)])[0]
        with self._store.read() as connection:
            self.index.sync(connection)

            def nearest(wanted: int) -> list[tuple[UUID, float]]:
                return self.index.nearest(chosen, query, wanted, connection=connection, sync=False)

            return _current_nearest(connection, chosen, size, nearest, moment)

    def similar_exact(self, text: str, *, kind: str, k: int) -> list[Similar]:
        """The same question answered by scanning every SQL vector (for comparison)."""
        chosen, size = _kind(kind), checked_count("k", k)
        query = self.embedder.embed([checked_text("text", text)])[0]
        model = self.embedder.name
        with self._store.read() as connection:

            def nearest(wanted: int) -> list[tuple[UUID, float]]:
                return brute_force(connection, chosen, query, wanted, model=model)

            return _current_nearest(connection, chosen, size, nearest, NOW)

    def close(self) -> None:
        """Save the index file if it moved since it was loaded or last saved."""
        if self.index.save():
            _logger.debug("vectors.saved", path=str(self.index.path))

    def _forget_other_models(self) -> None:
        """Items embedded by another model are projected again with this one."""
        with self._store.read() as connection:
            models = models_in_use(connection)
        if models and models != [self.embedder.name]:
            with self._store.write() as connection:
                reset_vector_items(connection)
            self.index.forget()
            _logger.info("vectors.model_changed", found=models, model=self.embedder.name)


def _current_nearest(
    connection: Connection,
    kind: Kind,
    k: int,
    nearest: Callable[[int], list[tuple[UUID, float]]],
    moment: Moment,
) -> list[Similar]:
    """The `k` best of `nearest` that are current at `moment`, asking it for twice as many,
    then twice more, until `k` are found or it has no more: stale items are in the index too."""

    def current(found: list[tuple[UUID, float]]) -> list[Similar]:
        return _current(connection, kind, found, moment)

    _, kept = nearest_shown(nearest, current, Rounds(first=2 * k, enough=k, growth=2))
    return kept[:k]


def _current(
    connection: Connection, kind: Kind, found: list[tuple[UUID, float]], moment: Moment
) -> list[Similar]:
    """The items of `found` current at `moment`, best first: an entity merged away as the
    entity it was merged into (once, at its best score)."""
    if kind == "fact":
        believed = visible_facts(connection, [i.hex for i, _ in found], lens=Lens(moment=moment))
        return [Similar(kind=kind, item_id=i, score=s) for i, s in found if i.hex in believed]
    if kind == "entity":
        roots = visible_entities(connection, [i for i, _ in found], known_at=moment.known_at)
        best: dict[UUID, float] = {}
        for i, s in found:
            if i in roots and roots[i] not in best:
                best[roots[i]] = s
        return [Similar(kind=kind, item_id=i, score=s) for i, s in best.items()]
    if moment != NOW:  # every message in the index exists now
        said = visible_messages(connection, [i.hex for i, _ in found], moment=moment)
        return [Similar(kind=kind, item_id=i, score=s) for i, s in found if i.hex in said]
    return [Similar(kind=kind, item_id=i, score=s) for i, s in found]


def _kind(kind: str) -> Kind:
    checked_text("kind", kind)
    if kind not in KINDS:
        raise ValidationError("kind", kind, f"is not one of {_KIND_NAMES}")
    return kind
