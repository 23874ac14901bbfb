"""Similarity on the write path: a new name resolved to a similar entity of its type.

Runs under the write lock, only when `[memory.graph] use_embedding_resolution` is on and
only for names that neither an alias nor a canonical name resolved. The new name is
embedded once and compared with three sets of entities, which together are every entity
the log holds:

- those in the FAISS index (the vectors read model, up to its tracked position),
- those first observed in the log after that position (the index may lag the log: another
  process wrote, or projection runs as its own process), read from the log and embedded,
- those created earlier in the same batch (not in the log yet), read from the batch.

Candidates are followed through merges and kept only when of the same type (an archived
one included: seen again, it is back, as when its exact name is used). The verdict is
recorded (`entity-matched.v1`, then `entity-merged.v1` when the names mean one entity), so
replay and rebuild never embed. The disambiguator, when asked, runs under the write lock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Final
from uuid import UUID

import numpy as np

from apexmem.domain.embedding import Vectors, entity_text
from apexmem.domain.resolution import (
    THRESHOLD_JUDGE,
    Candidate,
    Disambiguator,
    KeepSeparate,
    Thresholds,
    band,
    decide_match,
)
from apexmem.domain.settings import GraphSettings
from apexmem.domain.state import EntityState
from apexmem.events.entity import EntityObserved
from apexmem.events.envelope import NewEvent, RecordedEvent
from apexmem.events.errors import ApexmemError
from apexmem.events.ports import Log
from apexmem.readmodels import ReadModels
from apexmem.readmodels.vectors import VECTORS
from apexmem.service.logs import get_logger
from apexmem.service.naming import follow
from apexmem.service.similarity import Similarity
from apexmem.service.staging import Meta, Staging
from apexmem.service.unseen import Unseen

__all__ = ["SimilarWrites", "similar_writes"]

_logger = get_logger()

NEAREST: Final = 10
"""Entities asked of the index per new name (of every type; the type filter comes after)."""
_CACHED_TEXTS: Final = 4_096
_OBSERVED: Final = ("entity-observed.v1",)


class _Seen:
    """Entities one batch compares besides the index's, with their vectors: those past the
    index's position when the batch started, and those the batch created so far."""

    def __init__(self) -> None:
        self.ids: list[UUID] = []
        self.vectors: list[Vectors] = []


class SimilarWrites:
    """What the write path asks of embeddings: name resolution and belief revision.

    One per memory; `names` and `beliefs` say which of the two are on.
    """

    def __init__(
        self,
        similarity: Similarity,
        log: Log,
        store: ReadModels,
        graph: GraphSettings,
        disambiguator: Disambiguator | None = None,
    ) -> None:
        self.names = graph.use_embedding_resolution
        self.beliefs = graph.belief_revision.enabled
        self.contradiction = graph.belief_revision.similarity_threshold
        self.thresholds = Thresholds(
            graph.entity_similarity_threshold, graph.entity_ambiguous_threshold
        )
        self.disambiguator: Disambiguator = disambiguator or KeepSeparate()
        self.similarity = similarity
        self.log = log
        self.store = store
        self._texts: OrderedDict[str, Vectors] = OrderedDict()
        self._unseen = Unseen(VECTORS, tags=_OBSERVED, new=_Seen, fold=self._add)

    @property
    def model(self) -> str:
        """The embedder's name, recorded with every verdict."""
        return self.similarity.embedder.name

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Vectors of `texts` (one embedder call for those not embedded lately)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._texts))
        if missing:
            for text, vector in zip(missing, self.similarity.embedder.embed(missing), strict=True):
                self._texts[text] = vector
        for text in texts:
            self._texts.move_to_end(text)
        found = np.stack([self._texts[t] for t in texts])
        while len(self._texts) > _CACHED_TEXTS:
            self._texts.popitem(last=False)
        return found

    def match_new(
        self, staging: Staging, observed: EntityObserved, meta: Meta
    ) -> EntityState | None:
        """Judge a just-created entity against its nearest one; the entity it merged into."""
        try:
            query = self.embed([entity_text(observed.name, observed.summary)])[0]
            scores = self._scores(staging, query)
            scores.pop(observed.entity_id.int, None)
            best = self._best(staging, scores, observed.entity_type, observed.entity_id)
            if best is None:
                return None
            candidate, score = best
            chosen = band(score, self.thresholds)
            if chosen == "create":
                return None
            if chosen == "merge":
                same, judge = True, THRESHOLD_JUDGE
            else:
                same, judge = self._ask(observed, candidate, score), self.disambiguator.name
        except ApexmemError:
            raise
        except Exception as e:  # a model's failure degrades to a new entity (DESIGN 4)
            _logger.warning("resolution.degraded", name=observed.name, error=repr(e))
            return None
        new = staging.state("entity", observed.entity_id)
        events = decide_match(
            new,
            candidate,
            score=score,
            verdict="same" if same else "different",
            judge=judge,
            model=self.model,
        )
        staging.emit("entity", observed.entity_id, events, meta)
        return candidate if same else None

    def _ask(self, observed: EntityObserved, candidate: EntityState, score: float) -> bool:
        assert candidate.entity_id is not None and candidate.entity_type is not None
        shown = Candidate(
            entity_id=candidate.entity_id,
            entity_type=candidate.entity_type,
            name=candidate.name or candidate.canonical_name or "",
            summary=candidate.summary,
            score=score,
        )
        return self.disambiguator.same_entity(observed.name, observed.summary, shown)

    def _scores(self, staging: Staging, query: Vectors) -> dict[int, float]:
        """Cosine to the query of the nearest indexed entities, the unindexed and the batch's."""
        seen = self._seen(staging)
        with self.store.read() as connection:
            indexed = self.similarity.index.nearest("entity", query, NEAREST, connection=connection)
        scores = {item.int: score for item, score in indexed}
        if seen.ids:
            found = np.stack(seen.vectors) @ query
            for entity, score in zip(seen.ids, found, strict=True):
                _keep_max(scores, entity, float(score))
        return scores

    def _seen(self, staging: Staging) -> _Seen:
        """The entities the index may not hold: those first observed past its position, and
        those the batch created so far (see service.unseen)."""
        return self._unseen.of(staging, self.log, self.store)

    def _add(self, seen: _Seen, events: Iterable[RecordedEvent | NewEvent]) -> None:
        fresh = [e.data for e in events if e.version == 1 and isinstance(e.data, EntityObserved)]
        if fresh:
            vectors = self.embed([entity_text(o.name, o.summary) for o in fresh])
            seen.ids += [o.entity_id for o in fresh]
            seen.vectors += list(vectors)

    def _best(
        self, staging: Staging, scores: dict[int, float], entity_type: str, new: UUID
    ) -> tuple[EntityState, float] | None:
        """The entity of `entity_type` (merges followed) scoring highest, at least `ambiguous`."""
        best: tuple[EntityState, float] | None = None
        for key, score in _ranked(scores.items()):
            if score < self.thresholds.ambiguous:
                break
            target = follow(staging, UUID(int=key))
            state: EntityState = staging.state("entity", target)
            if target == new or state.entity_type != entity_type:
                continue  # an archived entity stays a candidate: seen again, it is back
            best = (state, score)
            break
        return best


def similar_writes(
    graph: GraphSettings,
    similarity: Similarity | None,
    log: Log,
    store: ReadModels,
    disambiguator: Disambiguator | None = None,
) -> SimilarWrites | None:
    """The write path's similarity, or None (no cost at all) when neither feature is on."""
    if similarity is None or not (graph.use_embedding_resolution or graph.belief_revision.enabled):
        return None
    return SimilarWrites(similarity, log, store, graph, disambiguator)


def _keep_max(scores: dict[int, float], entity: UUID, score: float) -> None:
    if score > scores.get(entity.int, -2.0):
        scores[entity.int] = score


def _ranked(items: Iterable[tuple[int, float]]) -> list[tuple[int, float]]:
    """Highest score first; ties by id, so the choice never depends on read order."""
    return sorted(items, key=lambda item: (-item[1], item[0]))
