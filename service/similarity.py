"""The facade's vector side: nearest items to a text, by the FAISS index or every vector."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, get_args
from uuid import UUID

import msgspec
from sqlalchemy import Connection

from apexmem.domain.embedding import Embedder
from apexmem.events.errors import ApexmemError, DiskFullError, ValidationError
from apexmem.projections.vectors import KINDS, Kind
from apexmem.readmodels.moment import NOW, Lens, Moment
from apexmem.readmodels.recall import visible_facts, visible_messages
from apexmem.readmodels.search import visible_entities
from apexmem.readmodels.vector_index import VectorIndex
from apexmem.readmodels.vectors import brute_force
from apexmem.replay.projections import Projections
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
    """Answers nearest-item questions from the vectors the projection set keeps."""

    def __init__(self, projections: Projections) -> None:
        if projections.embedder is None or projections.index is None:
            raise ApexmemError("vectors are disabled: set [memory.vectors] enabled = true")
        self.embedder: Embedder = projections.embedder
        self.index: VectorIndex = projections.index
        self._store = projections.store
        if projections.replaced_models:
            _logger.info(
                "vectors.model_changed", found=projections.replaced_models, model=self.embedder.name
            )

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
        try:
            saved = self.index.save()
        except DiskFullError as e:  # a cache: the next open brings the file saved before up
            _logger.warning("vectors.not_saved", path=str(self.index.path), error=str(e))
            return
        if saved:
            _logger.debug("vectors.saved", path=str(self.index.path))


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
    if moment.valid_at is not None or moment.known_at is not None:  # else every message is
        said = visible_messages(connection, [i.hex for i, _ in found], moment=moment)
        return [Similar(kind=kind, item_id=i, score=s) for i, s in found if i.hex in said]
    return [Similar(kind=kind, item_id=i, score=s) for i, s in found]


def _kind(kind: str) -> Kind:
    checked_text("kind", kind)
    if kind not in KINDS:
        raise ValidationError("kind", kind, f"is not one of {_KIND_NAMES}")
    return kind
