"""Read models written with another table layout are projected again on open; the vectors
(another projection, with their own tables) are kept."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from apexmem import HashingEmbedder, Memory
from apexmem.readmodels import dump, tracked_position
from apexmem.readmodels.tables import GRAPH, LAYOUT
from apexmem.readmodels.vectors import VECTORS


def written(tmp_path: Path) -> Path:
    directory = tmp_path / "mem"
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        memory.assert_facts(
            [
                {"subject": f"person {i:03d}", "relation": "knows", "object": "Alice"}
                for i in range(50)
            ]
        )
        memory.observe_entity(name="Lonely", entity_type="person")
    return directory


def as_before_layouts(directory: Path) -> None:
    """Make the store look like one written before layouts were recorded (layout 1)."""
    with sqlite3.connect(directory / "readmodels.db") as connection:
        connection.execute("DROP TABLE layout")
        connection.execute("DROP TABLE entity_archives")
        connection.execute("DELETE FROM entities WHERE canonical_name = 'alice'")  # to see it again


def test_a_new_store_records_its_layout_and_is_not_projected_again(tmp_path: Path) -> None:
    directory = written(tmp_path)

    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        assert memory.store.relaid_from is None
        with memory.store.read() as connection:
            assert dump(connection)["layout"] == [(LAYOUT,)]


def test_a_store_of_an_earlier_layout_is_projected_again_and_keeps_its_vectors(
    tmp_path: Path,
) -> None:
    directory = written(tmp_path)
    with (
        Memory.open(directory, embedder=HashingEmbedder()) as memory,
        memory.store.read() as connection,
    ):
        expected = dump(connection)
        vectors = tracked_position(connection, VECTORS)
    as_before_layouts(directory)

    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        assert memory.store.relaid_from == 1
        with memory.store.read() as connection:
            assert tracked_position(connection, VECTORS) == vectors
            assert tracked_position(connection, GRAPH) == 0  # projected again at first use
        assert len(memory.facts_about("Alice")) == 50
        with memory.store.read() as connection:
            assert dump(connection) == expected
        assert memory.similar("person 001", kind="fact", k=1)

    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        assert memory.store.relaid_from is None


def test_a_store_of_another_layout_number_is_projected_again(tmp_path: Path) -> None:
    directory = written(tmp_path)
    with sqlite3.connect(directory / "readmodels.db") as connection:
        connection.execute("UPDATE layout SET version = ?", (LAYOUT + 1,))

    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        assert memory.store.relaid_from == LAYOUT + 1
        assert "Lonely" in [e.name for e in memory.entities(limit=100)]
