"""PRISM for a recall's BFS (seed 000): the cost of expanding each entity, by the question.

`[memory.graph] query_sensitive_cost` turns it on. The question's vector is the one the
recall already embedded; the entities' vectors are read from the store, one batch per
hop. Without a question vector (no embedder, vectors off) every entity costs its edge's
doubt alone, `1 - confidence`, and an entity without a vector likewise: the fallback is
silent, and the BFS keeps what it returns either way (`readmodels.traverse.expand`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from sqlalchemy import Connection

from apexmem.domain.recall.prism import edge_cost
from apexmem.readmodels.entity_vectors import entity_vectors
from apexmem.readmodels.traverse import Costs

__all__ = ["query_costs"]


def query_costs(connection: Connection, question: np.ndarray | None, *, model: str) -> Costs:
    """The costs of entities (ids as stored) reached over edges of the given confidence,
    for the `question`'s vector (None: confidence only) among vectors of `model`."""
    unit = None if question is None else _unit(question)

    def costs(over: Mapping[str, float]) -> dict[str, float]:
        if unit is None:
            return {node: edge_cost(confidence) for node, confidence in over.items()}
        vectors = entity_vectors(connection, list(over), model=model)
        found = {}
        for node, confidence in over.items():
            vector = vectors.get(node)
            similarity = None if vector is None else _cosine(unit, vector)
            found[node] = edge_cost(confidence, similarity)
        return found

    return costs


def _unit(vector: np.ndarray) -> np.ndarray | None:
    norm = float(np.linalg.norm(vector))
    return None if norm == 0.0 or not np.isfinite(norm) else vector / norm


def _cosine(unit: np.ndarray, vector: np.ndarray) -> float | None:
    """The cosine of a unit vector and `vector` (None for a zero vector or another length)."""
    if vector.shape != unit.shape:
        return None
    norm = float(np.linalg.norm(vector))
    return None if norm == 0.0 else float(np.dot(unit, vector)) / norm
