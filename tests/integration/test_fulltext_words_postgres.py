"""PostgreSQL's word tables: how many full-text rows hold each lexeme, kept in step with the
rows through new entities, aliases, summaries, facts and messages (the dump a rebuild is
compared with holds them too); and the word counts a recall chooses its words by are those
the GIN index gives."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pg_schemas import postgres_schema
from sqlalchemy import Connection, TableClause, func, select

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.readmodels import fulltext, fulltext_pg

_WORDS = ["work", "worker", "Working", "workshop", "École", "ecole", "café", "pro", "zebra", "42"]


@pytest.fixture(scope="module")
def memory() -> Iterator[Memory]:
    with postgres_schema("words") as url, Memory.open(url, embedder=HashingEmbedder()) as made:
        made.observe_entity(name="Work Group", summary="a group at work")
        made.assert_facts(
            [
                {"subject": f"Worker {i}", "relation": "works_at", "object": f"Workshop {i % 3}"}
                for i in range(30)
            ]
        )
        made.add_alias(entity="Work Group", alias="École Pro")
        made.observe_entity(name="Work Group", summary="a café team, 42 of them")
        made.add_messages(
            episode="talk",
            messages=[{"speaker": "ann", "text": "Working at the école, café at 42"}],
            extract=False,
        )
        made.assert_facts([{"subject": "Zebra", "relation": "likes", "object": "Café Pro"}])
        yield made


def _recounted(connection: Connection, name: str) -> dict[str, int]:
    rows = connection.exec_driver_sql(
        f"SELECT word, count(*) FROM {name}, unnest(tsvector_to_array(doc)) AS word GROUP BY word"
    )
    return dict(rows.all())


def _kept(connection: Connection, name: str) -> dict[str, int]:
    rows = connection.exec_driver_sql(f"SELECT word, rows FROM {name}_words WHERE rows <> 0")
    return dict(rows.all())


def test_the_word_tables_count_the_rows_holding_each_lexeme(memory: Memory) -> None:
    with memory.store.read() as connection:
        for name in fulltext_pg.TABLES:
            assert _kept(connection, name) == _recounted(connection, name), name
        entity_words = _kept(connection, "entities_fts")
    # the alias and the new summary were counted, the old summary's words taken away
    assert entity_words["ecole"] == 1
    assert entity_words["cafe"] >= 1
    assert "group" in entity_words


def _gin_count(
    connection: Connection, index: TableClause, word: str, *, prefix: bool, cap: int
) -> int:
    """The rows of `index` the query of `word` matches, up to `cap`, read from the GIN index."""
    inner = select(index.c.rowid).where(fulltext.matches(index)).limit(cap).subquery()
    statement = select(func.count()).select_from(inner)
    match = fulltext.any_query([word], prefix=prefix)
    return int(connection.execute(statement, {"match": match}).scalar_one())


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4, unique=True),
    budget=st.integers(min_value=0, max_value=40),
    prefix=st.booleans(),
)
def test_word_counts_are_the_rows_the_index_matches_up_to_the_cap(
    memory: Memory, words: list[str], budget: int, prefix: bool
) -> None:
    indexes = [fulltext.entities_fts, fulltext.facts_fts, fulltext.messages_fts]
    with memory.store.read() as connection:
        counted = fulltext.term_counts(connection, indexes, words, budget=budget, prefix=prefix)
        for index in indexes:
            expected = {
                w: _gin_count(connection, index, w, prefix=prefix, cap=budget + 1) for w in words
            }
            assert counted[index.name] == expected, index.name


def test_a_store_made_before_the_word_tables_gets_them_counted_on_open() -> None:
    with postgres_schema("words_later") as url:
        with Memory.open(url, embedder=HashingEmbedder()) as memory:
            memory.assert_facts([{"subject": "Ann", "relation": "likes", "object": "Zebras"}])
            with memory.store.write() as connection:
                before = fulltext_pg.contents(connection)
                for name in fulltext_pg.WORD_TABLES:
                    connection.exec_driver_sql(f"DROP TABLE {name}")
        with (
            Memory.open(url, embedder=HashingEmbedder()) as memory,
            memory.store.read() as connection,
        ):
            assert fulltext_pg.contents(connection) == before
            assert _kept(connection, "facts_fts")["zebra"] == 1


@pytest.mark.parametrize("asked", ["École", "ÉCOLE", "ecole"])
def test_an_upper_case_accented_word_finds_its_name(memory: Memory, asked: str) -> None:
    found = memory.as_of().search_entities(asked)
    assert [hit.name for hit in found] == ["Work Group"]
