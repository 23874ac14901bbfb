"""A catch-up that applied many events leaves PostgreSQL's planner statistics, visibility
map and full-text indexes up to date, as autovacuum would have (a server may run without
it, or lag)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import psycopg
import pytest
from sqlalchemy import create_engine
from storage_backends import POSTGRES_URL, drop_schema, fresh_schema

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.settings import MemorySettings, ProjectionSettings, Settings
from apexmem.readmodels.postgres import MANY_EVENTS, analyze_if_grown, engine_for, postgres_url

_DEFERRED: Final = Settings(memory=MemorySettings(projection=ProjectionSettings(inline=False)))
_FTS_INDEXES: Final = ("facts_fts_doc", "messages_fts_doc", "entities_fts_doc")


@pytest.fixture
def schema() -> Iterator[str]:
    name = fresh_schema()
    yield name
    drop_schema(name)


def _open(schema: str) -> Memory:
    return Memory.open(
        f"{POSTGRES_URL}?schema={schema}", settings=_DEFERRED, embedder=HashingEmbedder()
    )


def _facts(count: int) -> list[dict[str, Any]]:
    return [
        {
            "subject": f"Person {i}",
            "relation": "uses",
            "object": f"Tool {i % 97}",
            "subject_type": "person",
            "object_type": "tool",
        }
        for i in range(count)
    ]


def _reltuples(schema: str, table: str) -> float:
    with psycopg.connect(POSTGRES_URL) as connection:
        row = connection.execute(
            "SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", (f"{schema}.{table}",)
        ).fetchone()
    assert row is not None
    return float(row[0])


def _pending_pages_cleaned(schema: str, index: str) -> int:
    with psycopg.connect(POSTGRES_URL) as connection:
        row = connection.execute(
            "SELECT gin_clean_pending_list(to_regclass(%s))", (f"{schema}.{index}",)
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_large_catch_up_analyzes_the_tables_and_empties_the_full_text_pending_lists(
    schema: str,
) -> None:
    with _open(schema) as memory:
        memory.assert_facts(_facts(1_500))

        done = memory.project()

    assert done.events >= MANY_EVENTS
    assert _reltuples(schema, "facts") >= 1_500
    assert _reltuples(schema, "facts_fts") >= 1_500
    assert [_pending_pages_cleaned(schema, i) for i in _FTS_INDEXES] == [0, 0, 0]


def _all_visible_share(schema: str, table: str) -> float:
    """The share of `table`'s pages the visibility map holds all-visible (as of its last
    VACUUM): what lets an index-only scan skip the heap."""
    with psycopg.connect(POSTGRES_URL) as connection:
        row = connection.execute(
            "SELECT relallvisible, relpages FROM pg_class WHERE oid = to_regclass(%s)",
            (f"{schema}.{table}",),
        ).fetchone()
    assert row is not None
    return float(row[0]) / max(int(row[1]), 1)


def test_a_large_catch_up_leaves_the_pages_it_filled_all_visible(schema: str) -> None:
    """On this server autovacuum is off (as in CI): without the catch-up's VACUUM no page is
    all-visible, and every index-only scan reads the heap too."""
    with _open(schema) as memory:
        memory.assert_facts(_facts(1_500))

        memory.project()

    assert [_all_visible_share(schema, t) for t in ("facts", "facts_fts", "entities")] == [
        1.0,
        1.0,
        1.0,
    ]


def _has_statistics(schema: str, table: str) -> bool:
    with psycopg.connect(POSTGRES_URL) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_stats WHERE schemaname = %s AND tablename = %s",
            (schema, table),
        ).fetchone()
    assert row is not None
    return int(row[0]) > 0


def test_a_catch_up_from_empty_leaves_statistics_on_the_tables_it_filled(schema: str) -> None:
    with _open(schema) as memory:
        memory.assert_facts(_facts(3_000))

        memory.project()  # from empty: indexes dropped, then made again (their sizes counted)

    assert [_has_statistics(schema, t) for t in ("facts", "entities", "facts_fts")] == [
        True,
        True,
        True,
    ]


def test_catch_ups_of_a_few_events_each_analyze_once_they_add_up(schema: str) -> None:
    with _open(schema) as memory:
        for i in range(12):
            memory.assert_facts(_facts(720)[i * 60 : (i + 1) * 60])
            memory.project()  # a follower keeping up: each catch-up under MANY_EVENTS

    assert _has_statistics(schema, "facts")


def test_inline_writes_analyze_once_their_events_add_up(schema: str) -> None:
    inline = Settings(memory=MemorySettings(projection=ProjectionSettings(inline=True)))
    location = f"{POSTGRES_URL}?schema={schema}"
    with Memory.open(location, settings=inline, embedder=HashingEmbedder()) as memory:
        for i in range(12):
            memory.assert_facts(_facts(720)[i * 60 : (i + 1) * 60])

    assert _has_statistics(schema, "facts")


def test_a_catch_up_of_a_few_events_leaves_the_tables_alone(schema: str) -> None:
    with _open(schema) as memory:
        memory.assert_facts(_facts(20))

        done = memory.project()

    assert done.events < MANY_EVENTS
    assert _reltuples(schema, "facts") < 0  # never analyzed
    assert _reltuples(schema, "vector_cache") < 0


def test_the_read_models_are_read_without_jit_or_parallel_workers(schema: str) -> None:
    engine = engine_for(POSTGRES_URL, schema)

    with engine.connect() as connection:
        found = [connection.exec_driver_sql(f"SHOW {s}").scalar() for s in _PER_QUESTION]

    engine.dispose()
    assert found == ["off", "0"]


_PER_QUESTION: Final = ("jit", "max_parallel_workers_per_gather")


def test_nothing_is_analyzed_on_sqlite(tmp_path: Any) -> None:
    with Memory.open(tmp_path / "mem", settings=_DEFERRED, embedder=HashingEmbedder()) as memory:
        memory.assert_facts(_facts(600))
        memory.project()

        analyzed = analyze_if_grown(memory.store.engine, 10 * MANY_EVENTS)

    assert analyzed == []


def test_tables_of_another_owner_are_left_to_autovacuum(schema: str) -> None:
    role = f"{schema}_reader"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as server:
        server.execute(f"CREATE SCHEMA {schema}")
        server.execute(f"CREATE TABLE {schema}.notes (doc tsvector)")
        server.execute(f"CREATE INDEX notes_doc ON {schema}.notes USING gin (doc)")
        server.execute(
            f"INSERT INTO {schema}.notes SELECT to_tsvector('simple', 'note ' || i)"
            " FROM generate_series(1, 5000) AS i"
        )
        server.execute(f"CREATE ROLE {role} LOGIN")
        server.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
    try:
        reader_url = postgres_url(POSTGRES_URL.replace("//postgres@", f"//{role}@"))
        as_reader = create_engine(reader_url, connect_args={"options": f"-csearch_path={schema}"})
        as_owner = engine_for(POSTGRES_URL, schema)

        by_reader = analyze_if_grown(as_reader, MANY_EVENTS)
        by_owner = analyze_if_grown(as_owner, MANY_EVENTS)

        assert by_reader == []
        assert by_owner == ["notes"]
        as_reader.dispose()
        as_owner.dispose()
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as server:
            server.execute(f"DROP OWNED BY {role}")
            server.execute(f"DROP ROLE {role}")
