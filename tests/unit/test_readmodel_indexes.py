"""The index of merged entities: a store made by an earlier version gets it when it opens,
and merge look-ups use it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.readmodels.store import ReadModelStore


def index_names(path: Path) -> set[str]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        return {name for (name,) in rows}


def plan(path: Path, sql: str) -> str:
    with sqlite3.connect(path) as connection:
        return " ".join(row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}"))


def test_an_earlier_store_gets_the_merged_index_when_it_opens(tmp_path: Path) -> None:
    path = tmp_path / "readmodels.db"
    ReadModelStore(path).close()
    with sqlite3.connect(path) as connection:  # as an earlier version left it
        connection.execute("DROP INDEX entities_merged")

    ReadModelStore(path).close()

    assert "entities_merged" in index_names(path)


def test_merges_are_read_from_the_merged_entities_only(tmp_path: Path) -> None:
    path = tmp_path / "readmodels.db"
    ReadModelStore(path).close()

    into = plan(path, "SELECT entity_id FROM entities WHERE merged_into IN ('a', 'b')"
                " AND merged_into IS NOT NULL")  # fmt: skip

    assert "USING INDEX entities_merged" in into


def test_merged_names_resolve_in_a_store_opened_without_the_index(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "mem", embedder=HashingEmbedder()) as memory:
        memory.observe_entity(name="Robert", entity_type="person")
        memory.observe_entity(name="Bob", entity_type="person")
        memory.merge(source="Bob", target="Robert", entity_type="person")
        memory.assert_fact(subject="Bob", subject_type="person", relation="lives_in", object="Oslo")
        path = memory.store.path
    with sqlite3.connect(path) as connection:
        connection.execute("DROP INDEX entities_merged")

    with Memory.open(tmp_path / "mem", embedder=HashingEmbedder()) as memory:
        [robert] = memory.entities("bob")
        assert robert.name == "Robert"
        assert len(robert.merged) == 1
        assert [f.object for f in memory.facts_about("Bob")] == ["Oslo"]
    assert "entities_merged" in index_names(path)
