"""FAISS indexes over the SQL vectors: one per kind, kept in a file beside readmodels.db.

The indexes are a cache of `vector_items`: `sync` adds the items past the last vid held,
and an item whose text changed is dropped from its old id. While a kind has fewer than
`hnsw_threshold` vectors its index is exact (`IndexIDMap2` over `IndexFlatIP`: cosine on
normalized vectors); past it the kind is rebuilt as HNSW (M=24, efSearch=128), whose
replaced ids stay in the graph as tombstones, filtered out of answers, until the next rebuild.

The file holds every kind's index and the tracked position of the vectors projection it
covers; it is written to a temporary file, fsynced and renamed over the old one. On open,
a missing file, a file of another model, or one whose position differs from the tracked
position is ignored and the indexes are rebuilt from the SQL vectors (nothing re-embedded).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any, Final, Literal
from uuid import UUID

import msgspec
import numpy as np
from sqlalchemy import Connection

from apexmem.domain.embedding import Vectors
from apexmem.projections.vectors import KINDS, Kind
from apexmem.readmodels.store import ReadModelStore, tracked_position
from apexmem.readmodels.vectors import VECTORS, item_ids, item_vectors, last_vid

__all__ = ["HNSW_EF_SEARCH", "HNSW_M", "HNSW_THRESHOLD", "VectorIndex"]

HNSW_THRESHOLD: Final = 50_000
"""Vectors of one kind past which its index turns from exact to HNSW. Measured on 2 cores
with 256 dimensions (WordLlama), one thread per query, k=30: an exact search takes 0.7 ms
at 20,000 vectors and 4.0 ms at 99,323, HNSW 0.38 ms there, but approximate, and its build
took 19 s (paid again on open when the index file is stale). At 50,000 the exact search
(about 2 ms) starts to cost a tenth of recall's latency target, so past it HNSW pays."""
HNSW_M: Final = 24
HNSW_EF_SEARCH: Final = 128
_HNSW_EF_CONSTRUCTION: Final = 80
_MAGIC: Final = b"APXVEC01"
_MAX_TOMBSTONES: Final = 1_000
"""Replaced ids an HNSW index may hold (or a quarter of its live ones) before it is rebuilt:
each is fetched and thrown away by every search."""


class _Header(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    dimension: int
    position: int
    watermark: int
    sizes: dict[str, int]


class _Kind:
    """One kind's index and which item each live id stands for."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.items: dict[int, UUID] = {}
        self.ids: dict[UUID, int] = {}

    @property
    def hnsw(self) -> bool:
        faiss = _faiss()
        return isinstance(faiss.downcast_index(self.index.index), faiss.IndexHNSWFlat)

    @property
    def dead(self) -> int:
        return int(self.index.ntotal) - len(self.items)


class VectorIndex:
    """Nearest items by cosine, per kind, over the vectors projection's SQL rows."""

    def __init__(
        self,
        store: ReadModelStore,
        *,
        model: str,
        dimension: int,
        path: Path | None = None,
        hnsw_threshold: int = HNSW_THRESHOLD,
    ) -> None:
        self._store = store
        self.model = model
        self.dimension = dimension
        self.path = path if path is not None else store.path.with_name("vectors.faiss")
        self.hnsw_threshold = hnsw_threshold
        self._kinds: dict[str, _Kind] | None = None
        self._position = 0
        self._watermark = 0
        self._saved = (-1, -1)
        self.opened: Literal["loaded", "rebuilt"] | None = None
        """How the indexes were opened: from the file, or rebuilt from the SQL vectors."""

    def open(self) -> None:
        """Load the index file when it is current, else rebuild from SQL; then catch up."""
        with self._store.read() as connection:
            position = tracked_position(connection, VECTORS)
            if self._load(position):
                self.opened = "loaded"
                self._map_items(connection)
            else:
                self.opened = "rebuilt"
                self._rebuild(connection, position)
            self._sync(connection)

    def sync(self, connection: Connection | None = None) -> None:
        """Take in the items the vectors projection wrote since the last look (read in
        `connection` when given, else in a read transaction of its own)."""
        if self._kinds is None:
            self.open()
            return
        if connection is not None:
            self._sync(connection)
            return
        with self._store.read() as reading:
            self._sync(reading)

    def nearest(
        self, kind: Kind, query: Vectors, k: int, *, connection: Connection | None = None
    ) -> list[tuple[UUID, float]]:
        """The `k` items of `kind` closest to the normalized `query` vector: (item id, cosine).

        A caller reading in a transaction passes its `connection`: the index then catches
        up with what that transaction sees, and no other transaction is opened.
        """
        self.sync(connection)
        assert self._kinds is not None
        held = self._kinds[kind]
        if k <= 0 or not held.items:
            return []
        wanted = min(int(held.index.ntotal), k + held.dead)
        vector = np.asarray(query, dtype=np.float32).reshape(1, -1)
        scores, ids = _search_one(held.index, vector, wanted)
        found: list[tuple[UUID, float]] = []
        for score, vid in zip(scores[0], ids[0], strict=True):
            item = held.items.get(int(vid))
            if item is not None:
                found.append((item, float(score)))
                if len(found) == k:
                    break
        return found

    def size(self, kind: Kind) -> int:
        """How many items of `kind` the index answers for."""
        self.sync()
        assert self._kinds is not None
        return len(self._kinds[kind].items)

    def is_hnsw(self, kind: Kind) -> bool:
        """Whether `kind`'s index is HNSW (else exact)."""
        self.sync()
        assert self._kinds is not None
        return self._kinds[kind].hnsw

    def forget(self) -> None:
        """The read models were dropped: rebuild on the next look, and drop the file."""
        self._kinds = None
        self.path.unlink(missing_ok=True)

    def save(self) -> bool:
        """Write the indexes and their position atomically, unless the file is current."""
        if self._kinds is None or self._saved == (self._position, self._watermark):
            return False
        serialize = _faiss().serialize_index
        blobs = {k: serialize(held.index).tobytes() for k, held in self._kinds.items()}
        header = _Header(
            model=self.model,
            dimension=self.dimension,
            position=self._position,
            watermark=self._watermark,
            sizes={k: len(b) for k, b in blobs.items()},
        )
        encoded = msgspec.json.encode(header)
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        with temporary.open("wb") as out:
            out.write(_MAGIC + struct.pack("<I", len(encoded)) + encoded)
            for blob in blobs.values():
                out.write(blob)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.path)
        self._saved = (self._position, self._watermark)
        return True

    def _load(self, position: int) -> bool:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return False
        if not data.startswith(_MAGIC):
            return False
        (length,) = struct.unpack_from("<I", data, len(_MAGIC))
        start = len(_MAGIC) + 4
        try:
            header = msgspec.json.decode(data[start : start + length], type=_Header)
        except msgspec.DecodeError:
            return False
        if (header.model, header.dimension, header.position) != (
            self.model,
            self.dimension,
            position,
        ) or set(header.sizes) != set(KINDS):
            return False
        offset = start + length
        kinds: dict[str, _Kind] = {}
        for kind in KINDS:
            size = header.sizes[kind]
            blob = np.frombuffer(data, dtype=np.uint8, count=size, offset=offset)
            kinds[kind] = _Kind(_searchable(_faiss().deserialize_index(blob)))
            offset += size
        self._kinds = kinds
        self._position, self._watermark = header.position, header.watermark
        self._saved = (header.position, header.watermark)
        return True

    def _map_items(self, connection: Connection) -> None:
        """Which item each id stands for (ids only: the vectors are in the file)."""
        assert self._kinds is not None
        for vid, kind, item_id in item_ids(connection, model=self.model):
            if vid <= self._watermark:
                held = self._kinds[kind]
                held.items[vid] = item_id
                held.ids[item_id] = vid

    def _rebuild(self, connection: Connection, position: int) -> None:
        self._kinds = {kind: self._build(connection, kind) for kind in KINDS}
        self._position = position
        self._watermark = max(
            (max(held.items, default=0) for held in self._kinds.values()), default=0
        )

    def _build(self, connection: Connection, kind: Kind) -> _Kind:
        vids: list[int] = []
        items: list[UUID] = []
        blobs: list[bytes] = []
        for vid, _, item_id, vector in item_vectors(connection, model=self.model, kind=kind):
            vids.append(vid)
            items.append(item_id)
            blobs.append(vector)
        held = _Kind(self._empty(hnsw=len(vids) >= self.hnsw_threshold))
        if vids:
            matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(vids), -1)
            held.index.add_with_ids(matrix, np.asarray(vids, dtype=np.int64))
        held.items = dict(zip(vids, items, strict=True))
        held.ids = dict(zip(items, vids, strict=True))
        return held

    def _sync(self, connection: Connection) -> None:
        assert self._kinds is not None
        position = tracked_position(connection, VECTORS)
        if position == self._position:
            return
        if position < self._position or last_vid(connection) < self._watermark:
            self._rebuild(connection, position)  # the read models were rebuilt meanwhile
            return
        added: dict[Kind, list[tuple[int, UUID, bytes]]] = {}
        for vid, kind, item_id, vector in item_vectors(
            connection, model=self.model, after=self._watermark
        ):
            added.setdefault(kind, []).append((vid, item_id, vector))
            self._watermark = max(self._watermark, vid)
        for kind, rows in added.items():
            held = self._kinds[kind]
            if not held.hnsw and len(held.items) + len(rows) >= self.hnsw_threshold:
                self._kinds[kind] = self._build(connection, kind)
                continue
            self._add(held, rows)
            if held.dead > max(_MAX_TOMBSTONES, len(held.items) // 4):
                self._kinds[kind] = self._build(connection, kind)  # sheds the tombstones
        self._position = position

    def _add(self, held: _Kind, rows: list[tuple[int, UUID, bytes]]) -> None:
        replaced = [held.ids[item] for _, item, _ in rows if item in held.ids]
        for old in replaced:
            del held.items[old]
        if replaced and not held.hnsw:  # HNSW cannot remove: the old ids stay as tombstones
            held.index.remove_ids(np.asarray(replaced, dtype=np.int64))
        matrix = np.frombuffer(b"".join(v for _, _, v in rows), dtype=np.float32)
        held.index.add_with_ids(
            matrix.reshape(len(rows), -1), np.asarray([vid for vid, _, _ in rows], dtype=np.int64)
        )
        for vid, item, _ in rows:
            held.items[vid] = item
            held.ids[item] = vid

    def _empty(self, *, hnsw: bool) -> Any:
        faiss = _faiss()
        if hnsw:
            inner = faiss.IndexHNSWFlat(self.dimension, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = _HNSW_EF_CONSTRUCTION
            inner.hnsw.efSearch = HNSW_EF_SEARCH
        else:
            inner = faiss.IndexFlatIP(self.dimension)
        return faiss.IndexIDMap2(inner)


def _faiss() -> Any:
    """faiss, imported on first use: it takes a fifth of a second, and most commands need none."""
    import faiss

    return faiss


def _search_one(index: Any, vector: Vectors, k: int) -> tuple[Any, Any]:
    """One query, searched on one OpenMP thread.

    FAISS splits even a single query across its threads; between queries they go to
    sleep, and waking them cost 6 ms a search on 2 cores against 0.13 ms on one thread
    (5,000 facts, flat index). The previous thread count is restored after.
    """
    faiss = _faiss()
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        return index.search(vector, k)  # type: ignore[no-any-return]
    finally:
        faiss.omp_set_num_threads(threads)


def _searchable(index: Any) -> Any:
    """A deserialized index with its search parameters set again (efSearch is not saved)."""
    faiss = _faiss()
    inner = faiss.downcast_index(index.index)
    if isinstance(inner, faiss.IndexHNSWFlat):
        inner.hnsw.efSearch = HNSW_EF_SEARCH
    return index
