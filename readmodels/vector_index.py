"""FAISS indexes over the SQL vectors: one per kind, kept in a file beside readmodels.db.

The indexes are a cache of `vector_items`: `sync` adds the items past the last vid held,
and drops the vids `vector_replaced` says an item left behind when its text changed. While
a kind has fewer than `hnsw_threshold` vectors its index is exact (`IndexIDMap` over
`IndexFlatIP`: cosine on normalized vectors); past it the kind is rebuilt as HNSW (M=24,
efConstruction=40, efSearch=256) over 8-bit scalar-quantized vectors (`IndexHNSWSQ`, see
`HNSW_STORAGE`), whose replaced ids stay in the graph as tombstones, skipped in answers,
until the next rebuild.

The index holds only vids and vectors, never item ids: an answer's ids are looked up in SQL
(a replaced vid is no longer there), and an HNSW index's candidates are scored again on
their float32 vectors, kept beside it (`vector_rows.ExactRows`), so the scores are exact
cosines whatever the index keeps. A build reads the SQL vectors in chunks of `_CHUNK` and
adds each: the whole matrix is never read at once.

The file holds the tracked position of the vectors projection it covers, each HNSW index's
float32 rows, and every kind's index, after a blake3 digest of everything that follows the
digest; it is streamed to a temporary file, fsynced and renamed over the old one, and read
back straight into the indexes once its digest matches (the rows are mapped from it, not
read into memory). On open, a missing file, a file of another model, or one
whose position differs from the tracked position is ignored and the indexes are rebuilt
from the SQL vectors (nothing re-embedded). A damaged file (its digest does not match, or
FAISS cannot read it) is deleted, rebuilt the same way, and reported to `on_discarded`.
A file of an earlier format (`APXVEC02` had no digest, `APXVEC03` no float32 rows) is
rebuilt too, silently, as a stale one would be, and the next save writes the current one.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal, TypeVar
from uuid import UUID

import blake3
import msgspec
import numpy as np
from sqlalchemy import Connection

from apexmem.domain.embedding import Vectors
from apexmem.events.diskfull import full_disk, is_full
from apexmem.projections.vectors import KINDS, Kind
from apexmem.readmodels.ports import ReadModels
from apexmem.readmodels.store import tracked_position
from apexmem.readmodels.vector_rows import ExactRows
from apexmem.readmodels.vectors import (
    VECTORS,
    count_items,
    item_vectors,
    items_of,
    kind_vectors,
    last_vid,
    replaced_between,
)

__all__ = [
    "HNSW_EF_CONSTRUCTION",
    "HNSW_EF_SEARCH",
    "HNSW_M",
    "HNSW_STORAGE",
    "HNSW_THRESHOLD",
    "ItemsOf",
    "VectorIndex",
]

T = TypeVar("T")
ItemsOf = Callable[[Connection, str, Kind, Sequence[int]], Mapping[int, T]]
"""What the vids still items of a kind stand for (`VectorIndex.nearest_items`): given the
connection, the model, the kind and the vids (`vectors.items_of` gives item ids)."""


HNSW_THRESHOLD: Final = 50_000
"""Vectors of one kind past which its index turns from exact to HNSW. Measured on 2 cores
with 256 dimensions (WordLlama), one thread per query, k=30: an exact search takes 0.7 ms
at 20,000 vectors and 4.0 ms at 99,323, HNSW 0.38 ms there, but approximate, and its build
took 19 s (paid again on open when the index file is stale). At 50,000 the exact search
(about 2 ms) starts to cost a tenth of recall's latency target, so past it HNSW pays."""
HNSW_M: Final = 24
HNSW_EF_SEARCH: Final = 256
"""Candidates kept while searching. A search is cheap beside a build (0.6 ms against 0.35 ms
with 128 at 85,414 fact vectors), and a wider search buys back the recall that a narrower
build (`HNSW_EF_CONSTRUCTION`) gives up."""
HNSW_EF_CONSTRUCTION: Final = 40
"""Candidates kept while linking a new vector: the build's cost, paid on every vector added
and again by every rebuild. On the suite's 100,000-fact workload (85,414 WordLlama fact
vectors, 500 template questions and 500 messages, 20 candidates rescored exactly, one
thread) recall@10 against an exact scan was 0.978 with 80 here and efSearch 128 (17.3 s of
CPU to build), 0.973 with 40 and efSearch 256 (11.0 s), 0.950 with 40 and 128, 0.990 with 80
and 256. At the suite's million facts with 80 and 128 it was 0.931
(bench/results/faiss-1000000*.json): bounded by M and efSearch, not storage."""
HNSW_STORAGE: Final = "8bit"
"""How an HNSW index stores its vectors: 8-bit scalar quantization (`IndexHNSWSQ`), one byte
per dimension, a quarter of float32, trained on the kind's first chunk. At 100,000 vectors
it built in the same CPU time as float32 storage (37.7 s against 38.9 s, efConstruction 80,
one thread) with recall@10 0.956 against 0.961 before rescoring (messages and fact sentences
as questions); the candidates are scored again on their float32 vectors (`ExactRows`,
mapped from the index file), so the scores answered are exact and only which candidates
come back depends on it. float16 storage (half the size) recalled like float32."""
_CHUNK: Final = 16_384
"""Vectors read from SQL and added at once while building (16 MiB at 256 dimensions)."""
_MAGIC: Final = b"APXVEC04"
_DIGEST_SIZE: Final = 32
"""Bytes of the blake3 digest after the magic: it covers the rest of the file."""
_READ_SIZE: Final = 1 << 20
"""Bytes read at once while checking the digest."""
_MAX_TOMBSTONES: Final = 1_000
"""Replaced ids an HNSW index may hold (or a quarter of its live ones) before it is rebuilt:
each is fetched and thrown away by every search."""
_RANGE_MARGIN: Final = 0.1
"""How far past the training chunk's per-dimension range the 8-bit codes reach (a share
of the range on each side), for later vectors a little outside it."""


class _Header(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    dimension: int
    position: int
    watermark: int
    dead: dict[str, int]
    rows: dict[str, int]
    """Float32 rows stored per kind (an HNSW index's, `ExactRows`), after the header."""


class _Kind:
    """One kind's index, and how many of its ids stand for a replaced text (tombstones)."""

    def __init__(
        self,
        index: Any,
        dead: int = 0,
        rows: ExactRows | None = None,
        *,
        spill_to: Path | None = None,
    ) -> None:
        self.index = index
        self.dead = dead
        faiss = _faiss()
        self.hnsw: bool = isinstance(faiss.downcast_index(index.index), faiss.IndexHNSW)
        self.rows: ExactRows | None = None
        """An HNSW index's float32 vectors, to score its candidates exactly."""
        if self.hnsw:
            self.rows = rows if rows is not None else ExactRows(int(index.d), spill_to=spill_to)

    def add(self, vids: Any, matrix: Any) -> None:
        """Add these vectors under these vids (ascending, past every vid held)."""
        self.index.add_with_ids(matrix, vids)
        if self.rows is not None:
            self.rows.add(vids, matrix)

    @property
    def total(self) -> int:
        return int(self.index.ntotal)

    @property
    def live(self) -> int:
        return self.total - self.dead


class VectorIndex:
    """Nearest items by cosine, per kind, over the vectors projection's SQL rows."""

    def __init__(
        self,
        store: ReadModels,
        *,
        model: str,
        dimension: int,
        path: Path | None = None,
        hnsw_threshold: int = HNSW_THRESHOLD,
        on_discarded: Callable[[Path, str], None] | None = None,
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
        self._on_discarded = on_discarded
        """Told the path and why when a damaged index file is deleted to be rebuilt (this
        module does not log: whoever builds the index does)."""

    def open(self, connection: Connection | None = None) -> None:
        """Load the index file when it is not past the read models, else rebuild from SQL;
        then catch up from the vectors table by position."""
        if connection is None:
            with self._store.read() as reading:
                self.open(reading)
            return
        position = tracked_position(connection, VECTORS)
        if self._load(position):
            self.opened = "loaded"
        else:
            self.opened = "rebuilt"
            self._rebuild(connection, position)
        self._sync(connection)

    def sync(self, connection: Connection | None = None) -> None:
        """Take in the items the vectors projection wrote since the last look (read in
        `connection` when given, else in a read transaction of its own)."""
        if connection is None:
            with self._store.read() as reading:
                self.sync(reading)
        elif self._kinds is None:
            self.open(connection)
        else:
            self._sync(connection)

    def nearest(
        self,
        kind: Kind,
        query: Vectors,
        k: int,
        *,
        connection: Connection | None = None,
        sync: bool = True,
    ) -> list[tuple[UUID, float]]:
        """The `k` items of `kind` closest to the normalized `query` vector: (item id, cosine).

        A caller reading in a transaction passes its `connection`: the index then catches
        up with what that transaction sees, and no other transaction is opened; `sync=False`
        when the caller already synced the index in that transaction.
        """
        found = self.nearest_keys(kind, query, k, connection=connection, sync=sync)
        return [(UUID(hex=item), score) for item, score in found]

    def nearest_keys(
        self,
        kind: Kind,
        query: Vectors,
        k: int,
        *,
        connection: Connection | None = None,
        sync: bool = True,
    ) -> list[tuple[str, float]]:
        """`nearest` with the item ids as stored (hex), for callers that query SQL with them."""
        return self.nearest_items(kind, query, k, items=items_of, connection=connection, sync=sync)

    def nearest_items(
        self,
        kind: Kind,
        query: Vectors,
        k: int,
        *,
        items: ItemsOf[T],
        connection: Connection | None = None,
        sync: bool = True,
    ) -> list[tuple[T, float]]:
        """`nearest_keys` with each item as `items` gives it: `items(connection, model, kind,
        vids)` answers for the vids still items of `kind` (what it answers for each vid is
        the caller's: an id, or an id with the row a question sees, read in the same
        statement)."""
        if connection is None:
            with self._store.read() as reading:
                return self.nearest_items(kind, query, k, items=items, connection=reading)
        if sync or self._kinds is None:
            self.sync(connection)
        assert self._kinds is not None
        held = self._kinds[kind]
        if k <= 0 or held.live <= 0:
            return []
        vector = np.asarray(query, dtype=np.float32).reshape(1, -1)
        if not held.hnsw:  # exact scores already: only which items the ids stand for
            scores, ids = _search_one(held.index, vector, min(held.total, k))
            found = items(connection, self.model, kind, ids[0].tolist())
            return [
                (found[vid], float(score))
                for score, vid in zip(scores[0].tolist(), ids[0].tolist(), strict=True)
                if vid in found
            ]
        assert held.rows is not None
        wanted = 2 * k + held.dead  # the second k: more candidates to rescore
        for _ in range(3):  # more when fewer than k candidates are still items
            wanted = min(held.total, wanted)
            _, ids = _search_one(held.index, vector, wanted)
            vids = [int(v) for v in ids[0] if v >= 0]
            score = dict(zip(vids, (held.rows.vectors(vids) @ vector[0]).tolist(), strict=True))
            best = sorted(vids, key=lambda vid: (-score[vid], vid))
            live = self._live(connection, kind, best, k, dead=held.dead, items=items)
            if len(live) >= k or wanted >= held.total:
                break
            wanted *= 2
        return [(item, score[vid]) for vid, item in live]

    def _live(
        self,
        connection: Connection,
        kind: Kind,
        best: list[int],
        k: int,
        *,
        dead: int,
        items: ItemsOf[T],
    ) -> list[tuple[int, T]]:
        """The first `k` of `best` (vids, best first) that are still items of `kind`, as
        `items` gives them: asked of SQL `k + dead` at a time, best first (only a replaced
        text's vid is passed over)."""
        found: list[tuple[int, T]] = []
        step = k + dead
        for start in range(0, len(best), step):
            asked = best[start : start + step]
            answered = items(connection, self.model, kind, asked)
            found += [(vid, answered[vid]) for vid in asked if vid in answered]
            if len(found) >= k:
                break
        return found[:k]

    def size(self, kind: Kind) -> int:
        """How many items of `kind` the index answers for."""
        self.sync()
        assert self._kinds is not None
        return self._kinds[kind].live

    def is_hnsw(self, kind: Kind) -> bool:
        """Whether `kind`'s index is HNSW (else exact)."""
        self.sync()
        assert self._kinds is not None
        return self._kinds[kind].hnsw

    def forget(self) -> None:
        """The read models were dropped: rebuild on the next look, and drop the file."""
        self._kinds = None
        self._saved = (-1, -1)  # the rebuilt indexes may reach the same marks: save them again
        self.path.unlink(missing_ok=True)

    def save(self) -> bool:
        """Write the indexes and their position atomically, after a blake3 digest of what
        follows it, unless the file is current."""
        if self._kinds is None or self._saved == (self._position, self._watermark):
            return False
        faiss = _faiss()
        header = _Header(
            model=self.model,
            dimension=self.dimension,
            position=self._position,
            watermark=self._watermark,
            dead={kind: held.dead for kind, held in self._kinds.items()},
            rows={kind: len(held.rows or ()) for kind, held in self._kinds.items()},
        )
        encoded = msgspec.json.encode(header)
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        digest = blake3.blake3()

        def write(data: bytes) -> int:
            digest.update(data)
            return out.write(data)

        try:
            with temporary.open("wb") as out:
                out.write(_MAGIC + bytes(_DIGEST_SIZE))  # the digest, once the rest is written
                write(struct.pack("<I", len(encoded)) + encoded)
                for kind in KINDS:  # each HNSW index's float32 rows, for `ExactRows.mapped`
                    rows = self._kinds[kind].rows
                    if rows is not None:
                        rows.write(write)
                writer = faiss.PyCallbackIOWriter(write)
                for kind in KINDS:
                    faiss.write_index(self._kinds[kind].index, writer)
                out.seek(len(_MAGIC))
                out.write(digest.digest())
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except OSError as e:
            if is_full(e):  # the file saved before is whole: it was replaced only once written
                raise full_disk(self.path, e) from e
            raise
        finally:
            temporary.unlink(missing_ok=True)
        self._saved = (self._position, self._watermark)
        return True

    def _load(self, position: int) -> bool:
        """Read the file into the indexes if it is of this model and not past `position`; a
        file whose digest does not match, or that FAISS cannot read, is discarded."""
        try:
            with self.path.open("rb") as source:
                read = self._read(source, position)
        except FileNotFoundError:
            return False
        if isinstance(read, str):
            self._discard(read)
            return False
        if read is None:
            return False
        header, held = read
        self._kinds = dict(zip(KINDS, held, strict=True))
        self._position, self._watermark = header.position, header.watermark
        self._saved = (header.position, header.watermark)
        return True

    def _read(self, source: BinaryIO, position: int) -> tuple[_Header, list[_Kind]] | str | None:
        """The header and indexes of the open file, if it is of this model and not past
        `position`; None when it is not (or is of another format: not damaged); why, when it
        is damaged."""
        if source.read(len(_MAGIC)) != _MAGIC:
            return None
        damage = _damage(source)
        if damage is not None:
            return damage
        header = _read_header(source.read)
        # A file behind the read models is loaded and caught up from their table (`_sync`):
        # on PostgreSQL a reader's local file falls behind whenever other processes write.
        if (
            header is None
            or (header.model, header.dimension) != (self.model, self.dimension)
            or header.position > position
        ):
            return None
        faiss = _faiss()
        rows_at = source.tell()
        source.seek(rows_at + 4 * self.dimension * sum(header.rows.values()))
        try:
            reader = faiss.PyCallbackIOReader(source.read)
            indexes = [_searchable(faiss.read_index(reader)) for _ in KINDS]
        except RuntimeError as e:
            return f"FAISS cannot read it: {e}"
        held = []
        for kind, index in zip(KINDS, indexes, strict=True):
            count, rows = header.rows.get(kind, 0), None
            if count:
                ids = faiss.vector_to_array(index.id_map)
                if len(ids) != count:
                    return f"{count} float32 rows of {kind} for {len(ids)} ids"
                spill_to = self.path.parent
                rows = ExactRows.mapped(source, rows_at, ids, self.dimension, spill_to=spill_to)
            rows_at += 4 * self.dimension * count
            held.append(_Kind(index, header.dead.get(kind, 0), rows))
        return header, held

    def _discard(self, reason: str) -> None:
        """Delete the damaged file (the next save writes a sound one) and say why."""
        self.path.unlink(missing_ok=True)
        self._saved = (-1, -1)
        if self._on_discarded is not None:
            self._on_discarded(self.path, reason)

    def _rebuild(self, connection: Connection, position: int) -> None:
        self._kinds = None  # the old indexes go before the new ones are built
        self._kinds = {kind: self._build(connection, kind) for kind in KINDS}
        self._position = position
        self._watermark = last_vid(connection)

    def _rebuild_kind(self, connection: Connection, kind: Kind) -> None:
        assert self._kinds is not None
        self._kinds[kind] = _Kind(self._empty(hnsw=False))  # frees the old one first
        self._kinds[kind] = self._build(connection, kind)

    def _build(self, connection: Connection, kind: Kind) -> _Kind:
        """`kind`'s index from its SQL vectors, added a chunk at a time."""
        count = count_items(connection, model=self.model, kind=kind)
        held = _Kind(self._empty(hnsw=count >= self.hnsw_threshold), spill_to=self.path.parent)
        rows = kind_vectors(connection, model=self.model, kind=kind)
        for vids, matrix in _chunks(rows, self.dimension):
            if not held.index.is_trained:
                held.index.train(matrix)
            held.add(vids, matrix)
        return held

    def _sync(self, connection: Connection) -> None:
        assert self._kinds is not None
        # In a read whose readiness was checked (a recall's), no statement: the position
        # its transaction read first with the others (`ReadModelStore.check_reads`).
        position = tracked_position(connection, VECTORS)
        if position == self._position:
            return
        if position < self._position or last_vid(connection) < self._watermark:
            self._rebuild(connection, position)  # the read models were rebuilt meanwhile
            return
        before, rebuilt = self._watermark, set[Kind]()
        rows = item_vectors(connection, model=self.model, after=before)
        for chunk in iter(lambda: list(islice(rows, _CHUNK)), []):
            self._watermark = max(self._watermark, chunk[-1][0])
            by_kind: dict[Kind, list[tuple[int, bytes]]] = {}
            for vid, kind, _, vector in chunk:
                if kind not in rebuilt:
                    by_kind.setdefault(kind, []).append((vid, vector))
            for kind, added in by_kind.items():
                held = self._kinds[kind]
                if not held.hnsw and held.live + len(added) >= self.hnsw_threshold:
                    self._rebuild_kind(connection, kind)  # every row of the kind, to the end
                    rebuilt.add(kind)
                    continue
                for vids, matrix in _chunks(added, self.dimension):
                    held.add(vids, matrix)
        self._drop_replaced(connection, before, rebuilt)
        self._position = position

    def _drop_replaced(self, connection: Connection, before: int, rebuilt: set[Kind]) -> None:
        """Take out the vids whose item got a new text since `before` (tombstones in HNSW)."""
        assert self._kinds is not None
        gone: dict[Kind, list[int]] = {}
        for vid, kind in replaced_between(connection, before, self._watermark):
            if vid <= before and kind not in rebuilt:  # later ones were never added
                gone.setdefault(kind, []).append(vid)
        for kind, vids in gone.items():
            held = self._kinds[kind]
            if held.hnsw:  # HNSW cannot remove: the old ids stay as tombstones
                held.dead += len(vids)
                if held.dead > max(_MAX_TOMBSTONES, held.live // 4):
                    self._rebuild_kind(connection, kind)
            else:
                held.index.remove_ids(np.asarray(vids, dtype=np.int64))

    def _empty(self, *, hnsw: bool) -> Any:
        faiss = _faiss()
        if hnsw:
            inner = faiss.IndexHNSWSQ(
                self.dimension,
                faiss.ScalarQuantizer.QT_8bit,
                HNSW_M,
                faiss.METRIC_INNER_PRODUCT,
            )
            faiss.downcast_index(inner.storage).sq.rangestat_arg = _RANGE_MARGIN
            inner.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            inner.hnsw.efSearch = HNSW_EF_SEARCH
        else:
            inner = faiss.IndexFlatIP(self.dimension)
        return faiss.IndexIDMap(inner)


def _faiss() -> Any:
    """faiss, imported on first use: it takes a fifth of a second, and most commands need none."""
    import faiss

    return faiss


def _chunks(rows: Iterable[tuple[Any, ...]], dimension: int) -> Iterator[tuple[Any, Any]]:
    """(vids, float32 matrix) for each `_CHUNK` of (vid, vector bytes, ...) rows."""
    source = iter(rows)
    while chunk := list(islice(source, _CHUNK)):
        vids = np.fromiter((row[0] for row in chunk), dtype=np.int64, count=len(chunk))
        matrix = np.frombuffer(b"".join(row[1] for row in chunk), dtype=np.float32)
        yield vids, matrix.reshape(len(chunk), dimension)


def _damage(source: BinaryIO) -> str | None:
    """Why the index file `source`, read past its magic, is damaged, or None when its digest
    matches; then `source` is left after the digest, at the header's length."""
    start = source.tell()
    expected = source.read(_DIGEST_SIZE)
    digest = blake3.blake3()
    while chunk := source.read(_READ_SIZE):
        digest.update(chunk)
    found = digest.digest()
    if found != expected:
        return f"blake3 digest {found.hex()} differs from the one recorded, {expected.hex()}"
    source.seek(start + _DIGEST_SIZE)
    return None


def _read_header(read: Any) -> _Header | None:
    """The header that `read` reads next, or None when it is not one of this format."""
    size = read(4)
    if len(size) != 4:
        return None
    (length,) = struct.unpack("<I", size)
    try:
        header = msgspec.json.decode(read(length), type=_Header)
    except msgspec.DecodeError:
        return None
    return header if set(header.dead) == set(KINDS) else None


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
    """A read index with its search parameters set again (efSearch is not saved)."""
    faiss = _faiss()
    inner = faiss.downcast_index(index.index)
    if isinstance(inner, faiss.IndexHNSW):
        inner.hnsw.efSearch = HNSW_EF_SEARCH
    return index
