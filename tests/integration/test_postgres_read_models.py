"""Read models on PostgreSQL answer as on SQLite: the same writes into a memory on each, on
the same clock, project the same rows and answer the same questions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

import msgspec
import pytest
from storage_backends import POSTGRES_URL, drop_schema, fresh_schema

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.settings import (
    ActivationSettings,
    GraphSettings,
    MemorySettings,
    Settings,
)
from apexmem.events.errors import ApexmemError
from apexmem.readmodels import ReadModelStore, fulltext_pg
from apexmem.readmodels.store import dump

Clock = Callable[[], datetime]

_UNHURRIED: Final = Settings(
    memory=MemorySettings(
        graph=GraphSettings(spreading_activation=ActivationSettings(recall_timeout_ms=600_000))
    )
)
"""A recall's time budget out of the way: on a busy machine one backend's recall could be
cut short where the other's was not."""


def _clock() -> Clock:
    ticks = 0

    def now() -> datetime:
        nonlocal ticks
        ticks += 1
        return datetime(2024, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ticks)

    return now


def _write(memory: Memory) -> None:
    """A small history: types, a superseded employer, a note, aliases, messages, a merge."""
    memory.assert_fact(
        subject="Rust", relation="uses", object="cargo", subject_type="language", object_type="tool"
    )
    memory.assert_fact(
        subject="Alice", relation="works_at", object="Acme Corp", subject_type="person",
        object_type="organization", valid_from="2020-01-01T00:00:00Z",
    )  # fmt: skip
    memory.assert_fact(
        subject="Alice", relation="works_at", object="Globex", subject_type="person",
        object_type="organization", valid_from="2023-06-01T00:00:00Z",
    )  # fmt: skip
    memory.assert_fact(
        subject="Alice", relation="likes", value="painting landscapes", subject_type="person"
    )
    memory.assert_fact(subject="Graph databases", relation="store", value="nodes and edges")
    memory.assert_fact(subject="GraphQL", relation="is_a", object="query language")
    memory.add_alias(entity="Alice", alias="Ali", entity_type="person")
    memory.record_message(episode="c1", speaker="user", text="Alice painted the fence in Zürich")
    memory.record_message(episode="c1", speaker="assistant", text="Cargo builds Rust crates")
    memory.assert_fact(
        subject="A. Smith", relation="lives_in", object="Zürich", subject_type="person"
    )
    memory.merge(source="A. Smith", target="Alice", entity_type="person")
    memory.project()


@pytest.fixture
def memories(tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    """A memory on SQLite and one on PostgreSQL, written alike."""
    schema = fresh_schema()
    on_sqlite = Memory.open(
        tmp_path / "sqlite", settings=_UNHURRIED, clock=_clock(), embedder=HashingEmbedder()
    )
    on_postgres = Memory.open(
        f"{POSTGRES_URL}?schema={schema}",
        settings=_UNHURRIED,
        clock=_clock(),
        embedder=HashingEmbedder(),
    )
    try:
        for memory in (on_sqlite, on_postgres):
            _write(memory)
        yield on_sqlite, on_postgres
    finally:
        on_sqlite.close()
        on_postgres.close()
        drop_schema(schema)


def test_the_same_writes_project_the_same_rows_on_both_backends(
    memories: tuple[Memory, Memory],
) -> None:
    on_sqlite, on_postgres = memories

    with on_sqlite.store.read() as connection:
        expected = dump(connection)
    with on_postgres.store.read() as connection:
        found = dump(connection)
    # PostgreSQL's word tables are its own (FTS5 counts words in its index)
    assert all(found.pop(name) for name in fulltext_pg.WORD_TABLES)

    assert found == expected
    assert len(found["facts"]) >= 6


def test_a_rebuild_on_postgresql_gives_the_rows_incremental_projection_gave(
    memories: tuple[Memory, Memory],
) -> None:
    _, on_postgres = memories
    with on_postgres.store.read() as connection:
        incremental = dump(connection)

    on_postgres.rebuild()
    with on_postgres.store.read() as connection:
        rebuilt = dump(connection)

    assert rebuilt == incremental


@pytest.mark.parametrize(
    "ask",
    [
        lambda m: m.as_of().search_entities("ali"),
        lambda m: m.as_of().search_entities("graph"),
        lambda m: m.as_of().search_facts("cargo"),
        lambda m: m.as_of().search_facts("works"),
        lambda m: m.as_of(valid_at="2021-01-01T00:00:00Z").search_facts("works"),
        lambda m: m.as_of().search_messages("zurich"),
        lambda m: m.as_of().search_messages("painting"),
        lambda m: m.as_of().facts_about("Alice"),
        lambda m: m.as_of(valid_at="2021-01-01T00:00:00Z").facts_about("Alice"),
        lambda m: m.as_of().traverse("Rust", max_hops=2),
        lambda m: m.as_of().entities(),
    ],
    ids=[
        "search_entities prefix",
        "search_entities two names",
        "search_facts",
        "search_facts superseded",
        "search_facts valid then",
        "search_messages without diacritics",
        "search_messages stemmed",
        "facts_about",
        "facts_about valid then",
        "traverse",
        "entities",
    ],
)
def test_a_question_gets_the_same_answer_on_both_backends(
    memories: tuple[Memory, Memory], ask: Callable[[Memory], object]
) -> None:
    on_sqlite, on_postgres = memories

    expected, found = ask(on_sqlite), ask(on_postgres)

    assert _unscored(found) == _unscored(expected)
    assert expected


def _unscored(answer: object) -> object:
    """`answer` with full-text scores set to 0: bm25 on SQLite, ts_rank on PostgreSQL (no
    inverse document frequency) score differently, while the hits and their order agree."""
    if not isinstance(answer, list):
        return answer
    return [msgspec.structs.replace(h, score=0.0) if hasattr(h, "score") else h for h in answer]


def test_a_recall_finds_the_same_facts_on_both_backends(
    memories: tuple[Memory, Memory],
) -> None:
    on_sqlite, on_postgres = memories

    expected = on_sqlite.recall("Where does Alice work?", limit=20)
    found = on_postgres.recall("Where does Alice work?", limit=20)

    # Full-text scores differ (bm25 there, ts_rank here), so the order of the last hits can:
    # with room for every candidate, the facts and messages found are the same.
    assert {h.item_id for h in found.hits} == {h.item_id for h in expected.hits}
    assert any("Globex" in h.text for h in found.hits)
    assert not found.cut_short


def test_read_models_on_a_server_that_does_not_answer_are_one_clear_error(
    tmp_path: Path,
) -> None:
    with pytest.raises(ApexmemError, match=r"cannot open the read models at .*:1/nowhere"):
        ReadModelStore("postgresql://postgres:secret@127.0.0.1:1/nowhere", cache=tmp_path)

    assert "secret" not in str(_refusal(tmp_path))


def _refusal(tmp_path: Path) -> ApexmemError:
    try:
        ReadModelStore("postgresql://postgres:secret@127.0.0.1:1/nowhere", cache=tmp_path)
    except ApexmemError as e:
        return e
    raise AssertionError("the store opened")
