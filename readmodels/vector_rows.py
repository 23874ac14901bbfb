"""The float32 vectors of one HNSW index, in the index's own order, for exact rescoring.

An HNSW index keeps its vectors quantized (`vector_index.HNSW_STORAGE`), so its candidates
are scored again on their float32 vectors. Those were read from SQL by vid, each joined to
the vector cache: at 1,000,000 facts that read was about 40% of a recall on SQLite
(a random 1 kB row per candidate). `ExactRows` keeps them beside the index instead: row i
is the vector of the index's i-th id. Ids are added in ascending vid order (a build reads
the vectors by vid; a catch-up reads those past the last vid held), so a vid's row is found
by bisection. Rows read from the index file are mapped from it, not read into memory
(`mapped`); rows added since are held in memory, up to `SPILL_ROWS`, and beyond that
written to a temporary file beside the index and mapped from it, until the file is saved
again (a build of a 1,000,000-fact index would otherwise hold its 1.1 GB of rows).
"""

from __future__ import annotations

import os
import tempfile
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Final

import numpy as np

__all__ = ["SPILL_ROWS", "ExactRows"]

_WRITE_ROWS: Final = 4_096
"""Rows written at once when the file is saved (4 MiB at 256 dimensions)."""
SPILL_ROWS: Final = 65_536
"""Rows added since the file was mapped held in memory at most (64 MiB at 256 dimensions)."""


class ExactRows:
    """The float32 vector of each id of one index, in the order the ids were added."""

    def __init__(
        self, dimension: int, *, spill_to: Path | None = None, spill_rows: int = SPILL_ROWS
    ) -> None:
        """`spill_to`: the directory of the temporary file rows past `spill_rows` go to
        (None: the system's)."""
        self.dimension = dimension
        self._ids = np.empty(0, dtype=np.int64)
        self._mapped: np.ndarray[Any, Any] = np.empty((0, dimension), dtype=np.float32)
        self._spill_to = spill_to
        self._spill_rows = spill_rows
        self._spill: BinaryIO | None = None
        self._spilled: np.ndarray[Any, Any] = np.empty((0, dimension), dtype=np.float32)
        self._added: list[np.ndarray[Any, Any]] = []  # chunks of rows added since spilled
        self._starts: list[int] = []  # the row each of `_added` starts at, past the spilled

    @classmethod
    def mapped(
        cls,
        source: BinaryIO,
        offset: int,
        ids: np.ndarray[Any, Any],
        dimension: int,
        *,
        spill_to: Path | None = None,
        spill_rows: int = SPILL_ROWS,
    ) -> ExactRows:
        """The rows of `ids` (one per id, in order) stored at `offset` of the open file
        `source`, mapped read-only: the file as opened, even when another is renamed over
        it later (another process saving its index); rows added later as `__init__` says."""
        rows = cls(dimension, spill_to=spill_to, spill_rows=spill_rows)
        rows._ids = np.asarray(ids, dtype=np.int64)
        if len(ids):
            shape = (len(ids), dimension)
            rows._mapped = np.memmap(source, dtype=np.float32, mode="r", offset=offset, shape=shape)
        return rows

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def nbytes(self) -> int:
        """Bytes the rows take in a file."""
        return len(self._ids) * self.dimension * 4

    def add(self, ids: np.ndarray[Any, Any], matrix: np.ndarray[Any, Any]) -> None:
        """Rows for `ids`, which must follow every id held, ascending."""
        if not len(ids):
            return
        last = self._ids[-1] if len(self._ids) else -1
        if ids[0] <= last or np.any(np.diff(ids) <= 0):
            raise ValueError(f"ids must ascend past {last}: the index adds them by vid")
        self._starts.append(len(self._ids) - len(self._mapped) - len(self._spilled))
        self._ids = np.concatenate([self._ids, np.asarray(ids, dtype=np.int64)])
        self._added.append(np.array(matrix, dtype=np.float32, copy=True))
        if len(self._ids) - len(self._mapped) - len(self._spilled) > self._spill_rows:
            self._spill_added()

    def _spill_added(self) -> None:
        """Write the rows held in memory to the end of the temporary file and map it whole."""
        if self._spill is None:  # unnamed: gone with the rows (closed then) or the process
            spill = tempfile.TemporaryFile(prefix="apexmem-rows-", dir=self._spill_to)  # noqa: SIM115
            weakref.finalize(self, spill.close)
            self._spill = spill
        self._spill.seek(0, os.SEEK_END)
        for chunk in self._added:
            self._spill.write(np.ascontiguousarray(chunk, dtype=np.float32).tobytes())
        self._spill.flush()
        count = len(self._ids) - len(self._mapped)
        shape = (count, self.dimension)
        self._spilled = np.memmap(self._spill, dtype=np.float32, mode="r", shape=shape)
        self._added, self._starts = [], []

    def vectors(self, ids: Sequence[int]) -> np.ndarray[Any, Any]:
        """The rows of `ids` (each held), in their order, as one matrix."""
        wanted = np.asarray(ids, dtype=np.int64)
        at = np.searchsorted(self._ids, wanted)
        if len(at) and (at.max() >= len(self._ids) or np.any(self._ids[at] != wanted)):
            raise KeyError("an id asked for has no row: the index and its rows differ")
        mapped, spilled = len(self._mapped), len(self._spilled)
        out = np.empty((len(at), self.dimension), dtype=np.float32)
        early = at < mapped
        out[early] = self._mapped[at[early]]
        between = np.flatnonzero(~early & (at < mapped + spilled))
        out[between] = self._spilled[at[between] - mapped]
        late = np.flatnonzero(at >= mapped + spilled)
        if len(late):
            rows = at[late] - mapped - spilled
            chunk = np.searchsorted(self._starts, rows, side="right") - 1
            for c in np.unique(chunk):
                which = chunk == c
                out[late[which]] = self._added[c][rows[which] - self._starts[c]]
        return out

    def write(self, write: Callable[[bytes], Any]) -> None:
        """Every row, in order, as raw float32 (the layout `mapped` reads)."""
        for chunk in self._chunks():
            write(np.ascontiguousarray(chunk, dtype=np.float32).tobytes())

    def _chunks(self) -> Iterator[np.ndarray[Any, Any]]:
        for held in (self._mapped, self._spilled):
            for start in range(0, len(held), _WRITE_ROWS):
                yield held[start : start + _WRITE_ROWS]
        yield from self._added
