"""The vectors read model: embeddings cached by text hash, and the text each item is embedded by.

`vector_cache` holds one float32 vector per (model, blake3 of the text): a text is embedded
once, whatever item carries it and however often the read models are rebuilt (a rebuild
clears the items, never the cache). `vector_items` maps an entity, fact or message to its
text's hash. Its `vid` is the log position of the event that gave the item that text: the
item's id in the FAISS index, the same however the log was batched, and new whenever the
text changes, so an index catches up by reading the items past the last vid it holds (see
`readmodels.vector_index`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final
from uuid import UUID

import numpy as np
from blake3 import blake3
from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Index,
    LargeBinary,
    MetaData,
    String,
    Table,
    Uuid,
    bindparam,
    delete,
    func,
    insert,
    select,
)

from apexmem.domain.embedding import Embedder, Vectors
from apexmem.events.log import RecordedEvent
from apexmem.projections.vectors import Kind, VectorText, text_of
from apexmem.readmodels.store import set_position

__all__ = [
    "VECTORS",
    "VectorProjection",
    "brute_force",
    "item_ids",
    "item_vectors",
    "last_vid",
    "models_in_use",
    "reset_vector_items",
    "text_key",
    "vector_cache",
    "vector_items",
    "vector_metadata",
]

VECTORS: Final = "vectors"
"""The tracking name of the vectors projection."""

_CHUNK: Final = 500

vector_metadata = MetaData()
"""Apart from the graph's tables: `ReadModelStore.reset` must not drop the vector cache."""

vector_cache = Table(
    "vector_cache",
    vector_metadata,
    Column("model", String(128), primary_key=True),
    Column("text_key", String(64), primary_key=True),
    Column("vector", LargeBinary, nullable=False),
)

vector_items = Table(
    "vector_items",
    vector_metadata,
    Column("vid", BigInteger, primary_key=True, autoincrement=False),
    Column("kind", String(16), nullable=False),
    Column("item_id", Uuid, nullable=False),
    Column("model", String(128), nullable=False),
    Column("text_key", String(64), nullable=False),
    Index("vector_items_item", "kind", "item_id", unique=True),
)


def text_key(text: str) -> str:
    """The cache key of a text: its blake3 hash, hex."""
    return blake3(text.encode()).hexdigest()


class VectorProjection:
    """Embeds the texts a batch of events gives items, once per distinct text, into SQL."""

    name: Final = VECTORS
    drops_indexes: Final = False

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def apply(self, connection: Connection, events: Sequence[RecordedEvent]) -> None:
        """Cache the vectors of new texts and point each item at its text (caller's transaction)."""
        latest: dict[tuple[str, UUID], tuple[VectorText, int]] = {}
        for event in events:
            found = text_of(event)
            if found is not None:
                latest[(found.kind, found.item_id)] = (found, event.position)
        if not latest:
            return
        keyed = {text_key(t.text): t.text for t, _ in latest.values()}
        self._embed_missing(connection, keyed)
        model = self.embedder.name
        rows = [
            {"kind": t.kind, "item_id": t.item_id, "model": model, "key": text_key(t.text), "at": p}
            for t, p in latest.values()
        ]
        connection.execute(_FORGET, [{"kind": r["kind"], "item_id": r["item_id"]} for r in rows])
        connection.execute(_POINT, rows)

    def _embed_missing(self, connection: Connection, keyed: dict[str, str]) -> None:
        model = self.embedder.name
        cached: set[str] = set()
        keys = list(keyed)
        for i in range(0, len(keys), _CHUNK):
            chosen = keys[i : i + _CHUNK]
            cached.update(connection.execute(_CACHED, {"model": model, "keys": chosen}).scalars())
        missing = [k for k in keys if k not in cached]
        if not missing:
            return
        vectors = self.embedder.embed([keyed[k] for k in missing])
        connection.execute(
            insert(vector_cache),
            [
                {"model": model, "text_key": k, "vector": v.tobytes()}
                for k, v in zip(missing, vectors, strict=True)
            ],
        )


_CACHED: Final = select(vector_cache.c.text_key).where(
    vector_cache.c.model == bindparam("model"),
    vector_cache.c.text_key.in_(bindparam("keys", expanding=True)),
)
_FORGET: Final = delete(vector_items).where(
    vector_items.c.kind == bindparam("kind"), vector_items.c.item_id == bindparam("item_id")
)
_POINT: Final = insert(vector_items).values(
    kind=bindparam("kind"),
    item_id=bindparam("item_id"),
    model=bindparam("model"),
    text_key=bindparam("key"),
    vid=bindparam("at"),
)


def reset_vector_items(connection: Connection) -> None:
    """Drop the items and the tracked position, inside the caller's transaction; keep the cache."""
    vector_metadata.create_all(connection)
    connection.execute(delete(vector_items))
    set_position(connection, VECTORS, 0)


def models_in_use(connection: Connection) -> list[str]:
    """The models the items' vectors come from (one, unless the embedder was changed)."""
    return list(connection.execute(select(vector_items.c.model).distinct()).scalars())


def item_ids(connection: Connection, *, model: str) -> Iterator[tuple[int, Kind, UUID]]:
    """(vid, kind, item id) of every item embedded by `model`, in vid order."""
    query = (
        select(vector_items.c.vid, vector_items.c.kind, vector_items.c.item_id)
        .where(vector_items.c.model == model)
        .order_by(vector_items.c.vid)
    )
    yield from connection.execute(query)


def item_vectors(
    connection: Connection, *, model: str, after: int = 0, kind: Kind | None = None
) -> Iterator[tuple[int, Kind, UUID, bytes]]:
    """(vid, kind, item id, vector bytes) of the items past `after`, in vid order."""
    query = (
        select(
            vector_items.c.vid, vector_items.c.kind, vector_items.c.item_id, vector_cache.c.vector
        )
        .join(
            vector_cache,
            (vector_cache.c.model == vector_items.c.model)
            & (vector_cache.c.text_key == vector_items.c.text_key),
        )
        .where(vector_items.c.model == model, vector_items.c.vid > after)
        .order_by(vector_items.c.vid)
    )
    if kind is not None:
        query = query.where(vector_items.c.kind == kind)
    yield from connection.execute(query)


def last_vid(connection: Connection) -> int:
    """The highest vid in use (0 when there are no items)."""
    return int(connection.execute(select(func.max(vector_items.c.vid))).scalar() or 0)


def brute_force(
    connection: Connection, kind: Kind, query: Vectors, k: int, *, model: str
) -> list[tuple[UUID, float]]:
    """The exact top `k` (item id, cosine) of `kind` by a scan of every SQL vector."""
    ids: list[UUID] = []
    blobs: list[bytes] = []
    for _vid, _kind, item_id, vector in item_vectors(connection, model=model, kind=kind):
        ids.append(item_id)
        blobs.append(vector)
    if not ids or k <= 0:
        return []
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)
    scores = matrix @ np.asarray(query, dtype=np.float32).reshape(-1)
    top = _top(scores, k)
    return [(ids[i], float(scores[i])) for i in top]


def _top(scores: Any, k: int) -> Any:
    if k < len(scores):
        part = np.argpartition(-scores, k - 1)[:k]
        return part[np.argsort(-scores[part], kind="stable")]
    return np.argsort(-scores, kind="stable")
