"""`ExactRows`: an HNSW index's float32 vectors by id, mapped from a file and added since."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from apexmem.readmodels.vector_rows import ExactRows

DIMENSION = 4


def _matrix(ids: list[int]) -> np.ndarray:
    """A distinct row per id: the id in every column, plus the column."""
    return np.asarray([[i + c / 10 for c in range(DIMENSION)] for i in ids], dtype=np.float32)


@given(
    st.lists(st.integers(1, 10_000), min_size=1, max_size=60, unique=True).map(sorted),
    st.integers(0, 60),
    st.lists(st.integers(1, 20), max_size=5),
    st.randoms(use_true_random=False),
    st.integers(0, 70),
)
def test_rows_saved_and_mapped_then_added_answer_every_id(  # noqa: PLR0917 - hypothesis's
    tmp_path_factory: pytest.TempPathFactory,
    ids: list[int],
    saved: int,
    cuts: list[int],
    chance: object,
    spill: int,
) -> None:
    """Rows written by one `ExactRows` and mapped by another, then more added in chunks,
    give back each id's own row, in the order asked, and write them all again in order;
    rows past `spill` held in memory go to a temporary file on the way."""
    saved = min(saved, len(ids))
    spill_to = tmp_path_factory.mktemp("spill")
    first = ExactRows(DIMENSION, spill_to=spill_to, spill_rows=spill)
    start = 0
    for cut in [*cuts, len(ids)]:  # the saved ones added in chunks too
        end = min(saved, start + cut)
        first.add(np.asarray(ids[start:end]), _matrix(ids[start:end]))
        start = end
    path = tmp_path_factory.mktemp("rows") / "rows.f32"
    with path.open("wb") as out:
        out.write(b"head")
        first.write(out.write)
    with path.open("rb") as source:
        at = np.asarray(ids[:saved])
        rows = ExactRows.mapped(source, 4, at, DIMENSION, spill_to=spill_to, spill_rows=spill)
    for begin in range(saved, len(ids), 7):
        chunk = ids[begin : begin + 7]
        rows.add(np.asarray(chunk), _matrix(chunk))
    asked = list(ids)
    chance.shuffle(asked)  # type: ignore[attr-defined]
    assert len(rows) == len(ids)
    assert np.array_equal(rows.vectors(asked), _matrix(asked))
    written: list[bytes] = []
    rows.write(written.append)
    assert b"".join(written) == _matrix(ids).tobytes()


def test_ids_must_ascend_past_those_held() -> None:
    rows = ExactRows(DIMENSION)
    rows.add(np.asarray([5, 9]), _matrix([5, 9]))
    with pytest.raises(ValueError, match="ascend past 9"):
        rows.add(np.asarray([7]), _matrix([7]))
    with pytest.raises(ValueError, match="ascend"):
        rows.add(np.asarray([12, 11]), _matrix([12, 11]))
    assert len(rows) == 2


def test_an_id_without_a_row_is_refused() -> None:
    rows = ExactRows(DIMENSION)
    rows.add(np.asarray([5, 9]), _matrix([5, 9]))
    for missing in ([7], [10], [1]):
        with pytest.raises(KeyError, match="has no row"):
            rows.vectors(missing)
    assert rows.vectors([]).shape == (0, DIMENSION)
