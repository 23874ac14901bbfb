"""The vectors read model: embeddings cached by text hash, and the text each item is embedded by.

`vector_cache` holds one float32 vector per (model, blake3 of the text): a text is embedded
once, whatever item carries it and however often the read models are rebuilt (a rebuild
clears the items, never the cache). `vector_items` maps an entity, fact or message to its
text's hash. Its `vid` is the log position of the event that gave the item that text: the
item's id in the FAISS index, the same however the log was batched, and new whenever the
text changes, so an index catches up by reading the items past the last vid it holds (see
`readmodels.vector_index`). `vector_replaced` keeps the vids an item left behind when its
text changed, under the vid that replaced them: what an index past them must drop.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
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
    bindparam,
    delete,
    func,
    insert,
    select,
)

from apexmem.domain.embedding import Embedder, Vectors
from apexmem.events.envelope import RecordedEvent
from apexmem.projections.vectors import TEXT_TAGS, Kind, VectorText, text_of
from apexmem.readmodels.bulk import write_rows
from apexmem.readmodels.prepared import Prepared, as_stored, driver_rows, id_of, stored_id
from apexmem.readmodels.store import set_position
from apexmem.readmodels.tables import ID

__all__ = [
    "VECTORS",
    "VectorProjection",
    "brute_force",
    "count_items",
    "item_ids",
    "item_vectors",
    "items_of",
    "kind_vectors",
    "last_vid",
    "models_in_use",
    "replaced_between",
    "reset_vector_items",
    "text_key",
    "vector_cache",
    "vector_items",
    "vector_metadata",
    "vector_replaced",
]

VECTORS: Final = "vectors"
"""The tracking name of the vectors projection."""

_CHUNK: Final = 500
_SCAN: Final = 16_384
"""Vectors scored at once by a full scan."""

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
    Column("item_id", ID, nullable=False),
    Column("model", String(128), nullable=False),
    Column("text_key", String(64), nullable=False),
    Index("vector_items_item", "kind", "item_id", unique=True),
)

vector_replaced = Table(
    "vector_replaced",
    vector_metadata,
    Column("vid", BigInteger, primary_key=True, autoincrement=False),
    Column("kind", String(16), nullable=False),
    Column("replaced_at", BigInteger, nullable=False, index=True),
)


def text_key(text: str) -> str:
    """The cache key of a text: its blake3 hash, hex."""
    return blake3(text.encode()).hexdigest()


class VectorProjection:
    """Embeds the texts a batch of events gives items, once per distinct text, into SQL."""

    name: Final = VECTORS
    tags: Final[Sequence[str]] = TEXT_TAGS
    drops_indexes: Final = False

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def apply(self, connection: Connection, events: Sequence[RecordedEvent]) -> None:
        """Cache the vectors of new texts and point each item at its text (caller's transaction)."""
        latest: dict[tuple[Kind, UUID], tuple[VectorText, int]] = {}
        first: dict[tuple[Kind, UUID], int] = {}
        replaced: list[dict[str, Any]] = []  # a text set again inside the batch
        for event in events:
            found = text_of(event)
            if found is not None:
                key = (found.kind, found.item_id)
                if key in latest:
                    old = latest[key][1]
                    replaced.append({"vid": old, "kind": found.kind, "replaced_at": event.position})
                first.setdefault(key, event.position)
                latest[key] = (found, event.position)
        if not latest:
            return
        hashed = [(t, p, text_key(t.text)) for t, p in latest.values()]  # once per text
        self._embed_missing(connection, {key: t.text for t, _, key in hashed})
        model = self.embedder.name
        rows = [
            {"kind": t.kind, "item_id": t.item_id, "model": model, "key": key, "at": p}
            for t, p, key in hashed
        ]
        replaced += _forget(connection, first)
        write_rows(connection, ("vectors", "replaced"), lambda: _REPLACED, replaced)
        write_rows(connection, ("vectors", "point"), lambda: _POINT, rows)

    def _embed_missing(self, connection: Connection, keyed: dict[str, str]) -> None:
        model = self.embedder.name
        cached: set[str] = set()
        keys = list(keyed)
        for i in range(0, len(keys), _CHUNK):
            params = {"model": model, "keys": keys[i : i + _CHUNK]}
            cached.update(key for (key,) in _CACHED.rows(connection, params))
        missing = [k for k in keys if k not in cached]
        if not missing:
            return
        vectors = self.embedder.embed([keyed[k] for k in missing])
        rows = [
            {"model": model, "text_key": k, "vector": v.tobytes()}
            for k, v in zip(missing, vectors, strict=True)
        ]
        write_rows(connection, ("vectors", "cache"), lambda: _CACHE, rows)


_CACHE: Final = insert(vector_cache)
_REPLACED: Final = insert(vector_replaced)
_CACHED_ROW: Final = (vector_cache.c.model == vector_items.c.model) & (
    vector_cache.c.text_key == vector_items.c.text_key
)
_CACHED: Final = Prepared(
    lambda: select(vector_cache.c.text_key).where(
        vector_cache.c.model == bindparam("model"),
        vector_cache.c.text_key.in_(bindparam("keys", expanding=True)),
    )
)
"""Which texts have a vector already. Prepared (run on the driver) like the statements
below: a write with inline projection asks it every time, and SQLAlchemy's handling cost
more than SQLite's answer."""


_DROP: Final = Prepared(
    lambda: (
        delete(vector_items)
        .where(
            vector_items.c.kind == bindparam("kind"),
            as_stored(vector_items.c.item_id).in_(bindparam("ids", expanding=True)),
        )
        .returning(vector_items.c.vid, as_stored(vector_items.c.item_id))
    )
)
"""Drop items, returning their vids and (stored) ids."""


def _forget(connection: Connection, items: dict[tuple[Kind, UUID], int]) -> list[dict[str, Any]]:
    """Drop the items' rows; each old vid under the vid that first replaces it (`items`).

    Every vid an item had but its last is noted, however the log was batched: an index
    holding any of them learns it is gone.
    """
    by_kind: dict[Kind, list[UUID]] = {}
    for kind, item_id in items:
        by_kind.setdefault(kind, []).append(item_id)
    replaced = []
    for kind, ids in by_kind.items():
        for i in range(0, len(ids), _CHUNK):
            chunk = [stored_id(item_id) for item_id in ids[i : i + _CHUNK]]
            dropped = _DROP.rows(connection, {"kind": kind, "ids": chunk})
            replaced += [
                {"vid": vid, "kind": kind, "replaced_at": items[(kind, id_of(item_id))]}
                for vid, item_id in dropped
            ]
    return replaced


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
    connection.execute(delete(vector_replaced))
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


def kind_vectors(connection: Connection, *, model: str, kind: Kind) -> Iterator[tuple[int, bytes]]:
    """(vid, vector bytes) of every item of `kind` embedded by `model`, in vid order."""
    query = (
        select(vector_items.c.vid, vector_cache.c.vector)
        .join(vector_cache, _CACHED_ROW)
        .where(vector_items.c.model == model, vector_items.c.kind == kind)
        .order_by(vector_items.c.vid)
    )
    yield from connection.execute(query)


def items_of(connection: Connection, model: str, kind: Kind, vids: Sequence[int]) -> dict[int, str]:
    """The item id (hex) of each of `vids` that is still an item of `kind`.

    Plain SQL by the primary key: this runs on every nearest-item question, where building
    and compiling an SQLAlchemy statement cost more than the lookup.
    """
    if not vids:
        return {}
    among, params = _among(connection, vids)
    # On the driver's cursor (asked three times by every recall), prepared on PostgreSQL.
    rows = driver_rows(
        connection,
        f"SELECT vid, item_id, kind, model FROM vector_items WHERE vid {among}",
        params,
        keyed=True,
    )  # (not through the kind's index: it would be chosen and scanned)
    return {vid: item for vid, item, found, by in rows if found == kind and by == model}


def _among(connection: Connection, vids: Sequence[int]) -> tuple[str, tuple[Any, ...]]:
    """The condition "is one of `vids`" for plain SQL, and its parameters: on PostgreSQL one
    array parameter (one statement text, parsed once, whatever the count), else an IN list."""
    if connection.dialect.name == "postgresql":
        return "= ANY(%s::bigint[])", ([int(v) for v in vids],)
    return f"IN ({','.join('?' * len(vids))})", tuple(vids)


def count_items(connection: Connection, *, model: str, kind: Kind) -> int:
    """How many items of `kind` have a vector from `model`."""
    query = select(func.count()).where(vector_items.c.model == model, vector_items.c.kind == kind)
    return int(connection.execute(query).scalar() or 0)


def replaced_between(connection: Connection, after: int, until: int) -> Iterator[tuple[int, Kind]]:
    """(old vid, kind) of the items whose text was replaced by a vid in (`after`, `until`]."""
    query = select(vector_replaced.c.vid, vector_replaced.c.kind).where(
        vector_replaced.c.replaced_at > after, vector_replaced.c.replaced_at <= until
    )
    yield from connection.execute(query)


def last_vid(connection: Connection) -> int:
    """The highest vid in use (0 when there are no items)."""
    return int(connection.execute(select(func.max(vector_items.c.vid))).scalar() or 0)


def brute_force(
    connection: Connection, kind: Kind, query: Vectors, k: int, *, model: str
) -> list[tuple[UUID, float]]:
    """The exact top `k` (item id, cosine) of `kind` by a scan of every SQL vector (read
    and scored a chunk at a time: the scan never holds more than a chunk and the best k)."""
    if k <= 0:
        return []
    vector = np.asarray(query, dtype=np.float32).reshape(-1)
    best: list[UUID] = []
    best_scores = np.empty(0, dtype=np.float32)
    rows = item_vectors(connection, model=model, kind=kind)
    while chunk := list(islice(rows, _SCAN)):
        matrix = np.frombuffer(b"".join(row[3] for row in chunk), dtype=np.float32)
        scores = np.concatenate([best_scores, matrix.reshape(len(chunk), -1) @ vector])
        ids = best + [row[2] for row in chunk]
        top = _top(scores, k)
        best, best_scores = [ids[i] for i in top], scores[top]
    return [(item, float(score)) for item, score in zip(best, best_scores, strict=True)]


def _top(scores: Any, k: int) -> Any:
    if k < len(scores):
        part = np.sort(np.argpartition(-scores, k - 1)[:k])  # equal scores in vid order
        return part[np.argsort(-scores[part], kind="stable")]
    return np.argsort(-scores, kind="stable")
