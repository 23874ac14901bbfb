"""The FAISS index file carries a blake3 digest: a damaged file is rebuilt from the SQL
vectors, never searched."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, MutableMapping
from datetime import datetime
from pathlib import Path
from typing import Any

import blake3
import pytest
import structlog
from structlog.testing import capture_logs

from apexmem import Memory, Similar, composition, parse_settings
from apexmem.domain.embedding import HashingEmbedder

MAGIC, DIGEST = 8, 32
FACTS = 40


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[MutableMapping[str, Any]]]:
    """What the composition root logs (its logger was bound at import, to stderr)."""
    with capture_logs() as entries:
        monkeypatch.setattr(composition, "_logger", structlog.get_logger())
        yield entries


def _damaged(entries: list[MutableMapping[str, Any]]) -> list[str]:
    return [e["error"] for e in entries if e["event"] == "vectors.index_damaged"]


def _written(directory: Path, clock: Callable[[], datetime]) -> list[Similar]:
    """A closed memory of `FACTS` facts about 4 people, with its index file (the facts' vectors
    fill its middle); what `similar` answered."""
    with Memory.open(directory, clock=clock, embedder=HashingEmbedder()) as memory:
        memory.assert_facts(
            [
                {"subject": f"Person {i % 4}", "relation": "likes", "value": f"thing {i}"}
                for i in range(FACTS)
            ]
        )
        return memory.similar("Person 3 likes thing 7", k=FACTS)


def _reopened(directory: Path, clock: Callable[[], datetime]) -> tuple[list[Similar], str]:
    with Memory.open(directory, clock=clock, embedder=HashingEmbedder()) as memory:
        found = memory.similar("Person 3 likes thing 7", k=FACTS)
        assert memory.similarity is not None
        opened = memory.similarity.index.opened
    assert opened is not None
    return found, opened


def _sound(data: bytes) -> bool:
    return data[MAGIC : MAGIC + DIGEST] == blake3.blake3(data[MAGIC + DIGEST :]).digest()


def test_flipped_bytes_in_the_index_file_are_caught_and_the_index_rebuilt(
    tmp_path: Path, clock: Callable[[], datetime], logged: list[MutableMapping[str, Any]]
) -> None:
    directory = tmp_path / "mem"
    before = _written(directory, clock)
    index_file = directory / "vectors.faiss"
    damaged = bytearray(index_file.read_bytes())
    middle = len(damaged) // 2
    damaged[middle : middle + 16] = bytes(b ^ 0x5A for b in damaged[middle : middle + 16])
    index_file.write_bytes(damaged)

    after, opened = _reopened(directory, clock)

    assert len(before) == FACTS
    assert all(-1.0 <= found.score <= 1.0 for found in after)
    assert [f.item_id for f in after] == [f.item_id for f in before]
    assert [f.score for f in after] == pytest.approx([f.score for f in before])
    assert opened == "rebuilt"
    rewritten = index_file.read_bytes()
    assert rewritten != bytes(damaged)
    assert _sound(rewritten)
    assert [error.startswith("blake3 digest") for error in _damaged(logged)] == [True]


def test_an_index_file_whose_digest_matches_is_loaded_without_a_rebuild(
    tmp_path: Path, clock: Callable[[], datetime], logged: list[MutableMapping[str, Any]]
) -> None:
    directory = tmp_path / "mem"
    before = _written(directory, clock)
    index_file = directory / "vectors.faiss"
    saved = index_file.read_bytes()

    after, opened = _reopened(directory, clock)

    assert _sound(saved)
    assert opened == "loaded"
    assert after == before
    assert index_file.read_bytes() == saved  # nothing moved: not written again
    assert _damaged(logged) == []


def test_a_file_faiss_cannot_read_is_rebuilt_even_when_its_digest_matches(
    tmp_path: Path, clock: Callable[[], datetime], logged: list[MutableMapping[str, Any]]
) -> None:
    directory = tmp_path / "mem"
    before = _written(directory, clock)
    index_file = directory / "vectors.faiss"
    whole = index_file.read_bytes()
    cut = whole[MAGIC + DIGEST : len(whole) - 100]
    index_file.write_bytes(whole[:MAGIC] + blake3.blake3(cut).digest() + cut)

    after, opened = _reopened(directory, clock)

    assert opened == "rebuilt"
    assert after == before
    assert _sound(index_file.read_bytes())
    assert [error.startswith("FAISS cannot read it") for error in _damaged(logged)] == [True]


@pytest.mark.parametrize("older", [b"APXVEC02", b"APXVEC03"])  # no digest; no float32 rows
def test_an_index_file_of_an_earlier_format_is_rebuilt_and_saved_in_this_one(
    tmp_path: Path,
    clock: Callable[[], datetime],
    logged: list[MutableMapping[str, Any]],
    older: bytes,
) -> None:
    directory = tmp_path / "mem"
    before = _written(directory, clock)
    index_file = directory / "vectors.faiss"
    whole = index_file.read_bytes()
    index_file.write_bytes(older + whole[MAGIC:])

    after, opened = _reopened(directory, clock)

    assert opened == "rebuilt"
    assert after == before
    rewritten = index_file.read_bytes()
    assert rewritten[:MAGIC] == b"APXVEC04"
    assert _sound(rewritten)
    assert _damaged(logged) == []  # stale, not damaged


def _hnsw_memory(directory: Path, clock: Callable[[], datetime]) -> Memory:
    settings, _ = parse_settings("[memory.vectors]\nhnsw_threshold = 2\n")
    return Memory.open(directory, clock=clock, embedder=HashingEmbedder(), settings=settings)


def test_an_hnsw_index_reopened_scores_from_its_mapped_float32_rows_as_before(
    tmp_path: Path, clock: Callable[[], datetime], logged: list[MutableMapping[str, Any]]
) -> None:
    """The float32 rows an HNSW index rescores with are saved in the file and mapped on
    open: the same answers, scores to the bit; bytes flipped among them are caught."""
    directory = tmp_path / "mem"
    question = "Person 3 likes thing 7"
    with _hnsw_memory(directory, clock) as memory:
        memory.assert_facts(
            [
                {"subject": f"Person {i % 4}", "relation": "likes", "value": f"thing {i}"}
                for i in range(FACTS)
            ]
        )
        assert memory.similarity is not None and memory.similarity.index.is_hnsw("fact")
        before = memory.similar(question, k=10)
    index_file = directory / "vectors.faiss"
    whole = bytearray(index_file.read_bytes())
    (length,) = struct.unpack("<I", whole[MAGIC + DIGEST : MAGIC + DIGEST + 4])
    rows = MAGIC + DIGEST + 4 + length  # where the first float32 row starts

    with _hnsw_memory(directory, clock) as memory:
        assert memory.similar(question, k=10) == before
        assert memory.similarity is not None
        assert memory.similarity.index.opened == "loaded"

    whole[rows + 8 : rows + 12] = bytes(b ^ 0x5A for b in whole[rows + 8 : rows + 12])
    index_file.write_bytes(whole)
    with _hnsw_memory(directory, clock) as memory:
        assert memory.similar(question, k=10) == before
        assert memory.similarity is not None
        assert memory.similarity.index.opened == "rebuilt"
    assert [error.startswith("blake3 digest") for error in _damaged(logged)] == [True]
