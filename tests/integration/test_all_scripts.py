# ruff: noqa: RUF001 - the texts hold Chinese punctuation, as Chinese text does
"""Full text in scripts written without spaces (Chinese, Japanese, Korean, Thai) and in
scripts with vowel signs and other marks (Hindi, Arabic): search and recall find a word, on
SQLite and PostgreSQL alike, and a rebuild indexes the same grams as the writes did."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from storage_backends import POSTGRES_URL, STORES, drop_schema, fresh_schema

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.readmodels import fulltext, fulltext_pg
from apexmem.readmodels.store import dump


def _clock() -> Callable[[], datetime]:
    ticks = 0

    def now() -> datetime:
        nonlocal ticks
        ticks += 1
        return datetime(2024, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ticks)

    return now


def _write(memory: Memory) -> None:
    """Messages, facts and entities in Chinese, Japanese, Korean, Thai and English."""
    for speaker, text in [
        ("user", "我住在北京市，在一家科技公司工作"),
        ("user", "来週東京に行きます"),
        ("user", "서울에 살아요"),
        ("user", "สวัสดีครับ ผมอยู่กรุงเทพ"),
        ("assistant", "Alice lives in Paris"),
        ("user", "我喜欢上海的咖啡"),
        ("user", "नमस्ते, मैं दिल्ली में रहता हूँ"),
        ("user", "مَرْحَبًا، أنا أعيش في القاهرة"),
        ("user", "Привет, я живу в Москве"),
    ]:
        memory.record_message(episode="c1", speaker=speaker, text=text)
    memory.assert_fact(subject="小明", relation="lives_in", object="北京", object_type="place")
    memory.assert_fact(subject="田中さん", relation="works_at", object="東京大学")
    memory.assert_fact(subject="김민수", relation="likes", value="서울의 커피숍에서 책 읽기")
    memory.add_alias(entity="北京", alias="北京市", entity_type="place")
    memory.add_alias(entity="小明", alias="Xiaoming")
    memory.project()


@pytest.fixture(params=STORES, scope="module")
def memory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Memory]:
    """A memory on each backend, holding `_write`'s texts (shared: no test changes what it
    answers)."""
    schema = fresh_schema()
    folder = tmp_path_factory.mktemp("scripts")
    where = str(folder / "m") if request.param == "sqlite" else f"{POSTGRES_URL}?schema={schema}"
    opened = Memory.open(where, clock=_clock(), embedder=HashingEmbedder())
    try:
        _write(opened)
        yield opened
    finally:
        opened.close()
        drop_schema(schema)


def _texts(memory: Memory, query: str) -> list[str]:
    return [hit.text for hit in memory.search_messages(query)]


_FOUND = {
    "北京": "我住在北京市，在一家科技公司工作",
    "科技公司": "我住在北京市，在一家科技公司工作",
    "東京": "来週東京に行きます",
    "서울": "서울에 살아요",
    "กรุงเทพ": "สวัสดีครับ ผมอยู่กรุงเทพ",
    "上海": "我喜欢上海的咖啡",
    "咖": "我喜欢上海的咖啡",
    "नमस्ते": "नमस्ते, मैं दिल्ली में रहता हूँ",
    "दिल्ली": "नमस्ते, मैं दिल्ली में रहता हूँ",
    "مَرْحَبًا": "مَرْحَبًا، أنا أعيش في القاهرة",
    "القاهرة": "مَرْحَبًا، أنا أعيش في القاهرة",
    "Москве": "Привет, я живу в Москве",
}
"""A word (or a character) of each script, and the one message holding it."""


def test_a_word_inside_a_run_finds_its_message(memory: Memory) -> None:
    found = {query: _texts(memory, query) for query in _FOUND}

    assert found == {query: [text] for query, text in _FOUND.items()}


def test_every_word_of_the_question_must_be_in_a_searched_message(memory: Memory) -> None:
    assert _texts(memory, "北京 上海") == []
    assert _texts(memory, "Alice Paris") == ["Alice lives in Paris"]


def test_facts_and_entities_are_found_by_a_word_inside_their_names(memory: Memory) -> None:
    facts = [hit.row.fact for hit in memory.search_facts("北京")]
    entities = [hit.name for hit in memory.search_entities("东京") + memory.search_entities("東京")]

    assert len(facts) == 1 and "小明" in facts[0]
    assert entities == ["東京大学"]
    assert [hit.name for hit in memory.search_entities("xiaoming")] == ["小明"]
    assert [hit.name for hit in memory.search_entities("北京市")] == ["北京"]


def test_a_recall_in_chinese_finds_the_fact_and_the_message(memory: Memory) -> None:
    texts = [hit.text for hit in memory.recall("小明住在哪里？北京吗", limit=10).hits]

    assert any("北京" in t and "小明" in t for t in texts)
    assert any(t.startswith("我住在北京市") for t in texts)


def test_a_korean_recall_finds_the_value_by_a_word_with_its_particle(memory: Memory) -> None:
    texts = [hit.text for hit in memory.recall("서울 커피숍", limit=5).hits]

    assert any("서울의 커피숍" in t for t in texts)


def test_a_rebuild_indexes_the_same_grams_as_the_writes(memory: Memory) -> None:
    with memory.store.read() as connection:
        written = dump(connection)

    memory.rebuild()
    with memory.store.read() as connection:
        rebuilt = dump(connection)

    assert rebuilt == written
    assert any("北京" in str(row) for row in written["messages_fts"])


def test_full_text_made_again_from_the_graph_tables_holds_the_same_grams(memory: Memory) -> None:
    with memory.store.write() as connection:
        written = dump(connection)
        engine = fulltext_pg if connection.dialect.name == "postgresql" else fulltext
        engine.drop(connection)
        engine.ensure(connection)
        made_again = dump(connection)

    assert made_again == written
