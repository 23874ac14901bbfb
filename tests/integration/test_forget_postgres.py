"""Forget on a PostgreSQL memory: the erased strings are in none of the files of its tables
on the server (read through the server: pg_read_binary_file), nor in this machine's cache
directory; the chain still verifies."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import psycopg
import pytest
from pg_schemas import postgres_schema
from storage_backends import POSTGRES_URL

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder

ERASED: Final = (b"Priya", b"priya", b"climbing", b"1987-03-14")


@pytest.fixture
def url() -> Iterator[str]:
    with postgres_schema("forget") as made:
        yield made


def _fill(memory: Memory) -> None:
    memory.assert_fact(
        subject="Priya Shah", subject_type="person", relation="born_on",
        value="1987-03-14", fact="Priya Shah was born on 1987-03-14",
    )  # fmt: skip
    memory.assert_fact(
        subject="Bob Stone", subject_type="person", relation="works_at",
        object="Acme Corp", object_type="organization", fact="Bob Stone works at Acme Corp",
    )  # fmt: skip
    memory.add_messages(
        episode="conv-7",
        messages=[{"speaker": "user", "text": "I met Priya Shah, she loves climbing"}],
    )
    memory.extract_pending()
    memory.project()


def _in_table_files(schema: str) -> set[bytes]:
    """The erased strings found in the files of the schema's tables, their TOAST tables
    and every index, after a checkpoint wrote every page out."""
    found: set[bytes] = set()
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute("CHECKPOINT")
        rows: list[Any] = connection.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
            "UNION SELECT pg_relation_filepath(c.reltoastrelid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.reltoastrelid <> 0",
            (schema, schema),
        ).fetchall()
        for (path,) in rows:
            if path is None:
                continue
            size = "(pg_stat_file(%s::text, true)).size"
            data = connection.execute(
                f"SELECT pg_read_binary_file(%s::text, 0, {size}, true)", (path, path)
            ).fetchone()
            content = bytes(data[0]) if data and data[0] is not None else b""
            found |= {word for word in ERASED if word in content}
    return found


def _in_files(directory: Path) -> set[bytes]:
    found: set[bytes] = set()
    for path in (p for p in directory.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found |= {word for word in ERASED if word in data}
    return found


def test_forgetting_on_postgresql_leaves_the_strings_in_no_table_file(url: str) -> None:
    schema = url.rpartition("schema=")[2]
    memory = Memory.open(url, embedder=HashingEmbedder())
    try:
        _fill(memory)
        assert _in_table_files(schema) == set(ERASED)

        report = memory.forget(entity="Priya Shah", entity_type="person", reason="request #123")

        assert report.entities == 1 and report.messages == 1
        assert memory.verify().ok
        assert [f.fact for f in memory.facts_about("Acme Corp")] == ["Bob Stone works at Acme Corp"]
        assert memory.search_messages("climbing") == []
        assert _in_table_files(schema) == set()
        assert _in_files(memory.directory) == set()
    finally:
        memory.close()


def test_a_replay_of_a_postgresql_memory_cut_before_an_erasure_verifies(
    url: str, tmp_path: Path
) -> None:
    memory = Memory.open(url, embedder=HashingEmbedder())
    try:
        _fill(memory)
        cut = memory.log.last_position()
        report = memory.forget(entity="Priya Shah", entity_type="person", reason="request #123")

        replayed = memory.replay(until=cut, into=tmp_path / "copy")
        try:
            verified = replayed.verify()
        finally:
            replayed.close()
    finally:
        memory.close()

    assert verified.ok
    assert verified.erased_elsewhere is not None
    assert verified.erased_elsewhere[0].startswith(f"{report.position}:")
    assert _in_files(tmp_path / "copy") == set()
