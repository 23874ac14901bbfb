"""The stored vectors of entities, by id: what PRISM compares a question with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
from sqlalchemy import Connection, bindparam, select

from apexmem.readmodels.prepared import Prepared, as_stored
from apexmem.readmodels.vectors import vector_cache, vector_items

__all__ = ["entity_vectors"]

_CHUNK: Final = 400
_VECTORS: Final = Prepared(
    lambda: (
        select(as_stored(vector_items.c.item_id), vector_cache.c.vector)
        .join(
            vector_cache,
            (vector_cache.c.model == vector_items.c.model)
            & (vector_cache.c.text_key == vector_items.c.text_key),
        )
        .where(
            vector_items.c.kind == "entity",
            vector_items.c.model == bindparam("model"),
            as_stored(vector_items.c.item_id).in_(bindparam("ids", expanding=True)),
        )
    ),
    keyed=True,
)


def entity_vectors(
    connection: Connection, ids: Sequence[str], *, model: str
) -> dict[str, np.ndarray]:
    """The vector `model` gave each of the entities `ids` (hex, as stored) that has one, one
    statement per 400 ids."""
    found: dict[str, np.ndarray] = {}
    wanted = list(dict.fromkeys(ids))
    for i in range(0, len(wanted), _CHUNK):
        params = {"model": model, "ids": wanted[i : i + _CHUNK]}
        for item, vector in _VECTORS.rows(connection, params):
            found[item] = np.frombuffer(vector, dtype=np.float32)
    return found
