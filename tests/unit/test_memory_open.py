"""`Memory.open` creates a memory by default; with `create=False` it opens only one there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from apexmem import Memory, NotFoundError
from apexmem.config import holds_memory
from apexmem.domain.embedding import HashingEmbedder


def test_open_creates_the_memory_by_default(tmp_path: Path) -> None:
    directory = tmp_path / "new" / "mem"

    with Memory.open(directory, embedder=HashingEmbedder()):
        pass

    assert holds_memory(directory)


def test_open_without_create_refuses_a_directory_with_no_memory_and_makes_nothing(
    tmp_path: Path,
) -> None:
    absent = tmp_path / "absent"
    settings_only = tmp_path / "settings-only"
    settings_only.mkdir()
    (settings_only / "apexmem.toml").write_text("[memory]\n", encoding="utf-8")

    with pytest.raises(NotFoundError, match=f"no memory in {re.escape(str(absent))} "):
        Memory.open(absent, create=False)
    with pytest.raises(NotFoundError, match=f"no memory in {re.escape(str(settings_only))} "):
        Memory.open(settings_only, create=False)

    assert not absent.exists()
    assert [p.name for p in settings_only.iterdir()] == ["apexmem.toml"]


def test_open_without_create_opens_a_memory_that_is_there(tmp_path: Path) -> None:
    directory = tmp_path / "mem"
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        memory.assert_fact(subject="Alice", relation="knows", object="Bob")

    with Memory.open(directory, create=False, embedder=HashingEmbedder()) as memory:
        assert [f.object for f in memory.facts_about("Alice")] == ["Bob"]
