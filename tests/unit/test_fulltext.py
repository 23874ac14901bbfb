"""Full-text search on a real memory: the digest's fuzzy cases (section 7, items 7, 8 and 16),
name weighting, the time axes of facts, messages, and rebuild.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from apexmem import Memory, ValidationError
from apexmem.domain.embedding import HashingEmbedder
from apexmem.readmodels import ReadModelStore, dump, fulltext
from apexmem.replay.runner import Runner


def names(memory: Memory, query: str) -> list[str]:
    """Names of the entities a full-text search finds, best first."""
    return [hit.name for hit in memory.search_entities(query)]


@pytest.fixture
def graphs(memory: Memory) -> Memory:
    """A memory holding the concepts GraphQL, Graph and Unrelated."""
    for name in ("GraphQL", "Graph", "Unrelated"):
        memory.observe_entity(name=name)
    return memory


def test_a_word_finds_every_entity_it_begins_and_ranks_the_whole_word_first(
    graphs: Memory,
) -> None:
    assert names(graphs, "graph") == ["Graph", "GraphQL"]


def test_a_prefix_finds_both_graphs_and_not_the_unrelated_entity(graphs: Memory) -> None:
    assert set(names(graphs, "Gra")) == {"Graph", "GraphQL"}


def test_a_prefix_matches_from_the_start_of_a_word_only(graphs: Memory) -> None:
    graphs.observe_entity(name="SQLite")

    assert names(graphs, "SQL") == ["SQLite"]


def test_or_is_not_an_operator_so_every_word_must_match(graphs: Memory) -> None:
    assert names(graphs, "graph OR unrelated") == []


@pytest.mark.parametrize("query", ["", "   ", "***", "(((", '"""'])
def test_an_empty_or_punctuation_only_query_finds_nothing_without_error(
    graphs: Memory, query: str
) -> None:
    assert graphs.search_entities(query) == []
    assert graphs.search_facts(query) == []
    assert graphs.search_messages(query) == []


def test_operator_characters_in_a_query_are_ignored(graphs: Memory) -> None:
    assert names(graphs, 'graph"()*:^')[0] == "Graph"


@pytest.mark.parametrize("query", ["rust-lang", "RUST-LANG"])
def test_an_alias_is_found_whatever_its_case(memory: Memory, query: str) -> None:
    memory.observe_entity(name="Rust", entity_type="language")
    memory.add_alias(entity="Rust", entity_type="language", alias="rust-lang")

    assert names(memory, query) == ["Rust"]


def test_a_name_match_outranks_a_summary_match(memory: Memory) -> None:
    memory.observe_entity(name="Zed", entity_type="tool", summary="an editor written in rust")
    memory.observe_entity(name="Rust", entity_type="language", summary="a language")

    hits = memory.search_entities("rust")

    assert [h.name for h in hits] == ["Rust", "Zed"]
    assert hits[0].score == 1.0
    assert 0.0 < hits[1].score < 0.5


def test_scores_lie_in_zero_to_one_and_never_increase(memory: Memory) -> None:
    for i in range(8):
        memory.observe_entity(name=f"Rust tool {i}", summary="rust " * i)

    scores = [h.score for h in memory.search_entities("rust tool")]

    assert len(scores) == 8
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)


def test_an_old_summary_stops_matching_after_an_update(memory: Memory) -> None:
    memory.observe_entity(name="Alice", entity_type="person", summary="likes systems")
    memory.observe_entity(name="Alice", entity_type="person", summary="likes gardens")

    assert names(memory, "systems") == []
    assert names(memory, "gardens") == ["Alice"]


def test_a_merged_entity_is_found_as_the_entity_it_was_merged_into(memory: Memory) -> None:
    memory.observe_entity(name="Postgres", entity_type="tool")
    memory.observe_entity(name="PostgreSQL", entity_type="tool")
    memory.merge(source="Postgres", target="PostgreSQL", entity_type="tool")

    assert names(memory, "postgres") == ["PostgreSQL"]


def test_an_entity_is_not_found_before_it_was_known(memory: Memory) -> None:
    before = datetime(2023, 1, 1, tzinfo=UTC)
    memory.observe_entity(name="Graph")

    assert memory.as_of(known_at=before).search_entities("graph") == []


def test_a_fact_sentence_is_found_and_maps_back_to_its_fact(memory: Memory) -> None:
    ref = memory.assert_fact(
        subject="Alice", relation="uses", object="neovim", fact="Alice edits code in neovim"
    )

    [hit] = memory.search_facts("edits neovim")

    assert hit.fact_id == ref.fact_id
    assert hit.row.fact == "Alice edits code in neovim"
    assert hit.score == 1.0


def test_a_superseded_fact_is_found_only_as_known_before_its_supersession(
    memory: Memory,
) -> None:
    acme = memory.assert_fact(
        subject="Alice", subject_type="person", relation="works_at", object="Acme"
    )
    [hit] = memory.search_facts("acme")
    memory.assert_fact(subject="Alice", subject_type="person", relation="works_at", object="Globex")

    then = memory.as_of(known_at=hit.row.recorded_at)

    assert memory.search_facts("acme") == []
    assert [h.fact_id for h in then.search_facts("acme")] == [acme.fact_id]
    assert [h.row.object for h in memory.search_facts("alice works")] == ["Globex"]


def test_a_fact_reinforced_in_other_words_is_found_by_its_new_sentence_and_then_by_its_old(
    memory: Memory,
) -> None:
    job: dict[str, Any] = {
        "subject": "Alice",
        "subject_type": "person",
        "relation": "works_at",
        "object": "Acme",
    }
    ref = memory.assert_fact(**job, fact="Alice works at Acme as an engineer")
    [hit] = memory.search_facts("engineer")
    memory.assert_fact(**job, fact="Alice works at Acme as a manager")

    then = memory.as_of(known_at=hit.row.recorded_at)

    assert [(h.fact_id, h.row.fact) for h in memory.search_facts("manager")] == [
        (ref.fact_id, "Alice works at Acme as a manager")
    ]
    assert memory.search_facts("engineer") == []
    assert [h.row.fact for h in then.search_facts("engineer")] == [
        "Alice works at Acme as an engineer"
    ]
    assert then.search_facts("manager") == []
    assert [h.row.fact for h in memory.search_facts("alice acme")] == [
        "Alice works at Acme as a manager"
    ]


def test_a_fact_search_keeps_to_the_edge_types_asked_for(memory: Memory) -> None:
    memory.assert_fact(
        subject="Build", relation="fails_because", object="Cache", edge_type="causal"
    )
    memory.assert_fact(subject="Build", relation="uses", object="Cargo")

    found = memory.search_facts("build", edge_types=["causal"])

    assert [h.row.object for h in found] == ["Cache"]
    with pytest.raises(ValidationError, match="edge_types"):
        memory.search_facts("build", edge_types=["sematic"])


def test_a_message_is_found_with_its_episode_and_speaker(memory: Memory) -> None:
    memory.record_message(episode="chat-1", speaker="user", text="I moved to Paris in spring")
    memory.record_message(episode="chat-1", speaker="agent", text="Noted, welcome to France")

    [hit] = memory.search_messages("paris")

    assert (hit.speaker, hit.text, hit.score) == ("user", "I moved to Paris in spring", 1.0)
    assert memory.search_messages("moved france") == []


def test_accents_are_ignored_on_both_sides(memory: Memory) -> None:
    memory.observe_entity(name="Café Müller", entity_type="place")

    assert names(memory, "cafe muller") == ["Café Müller"]
    assert names(memory, "CAFÉ") == ["Café Müller"]


def test_a_rebuild_gives_the_same_full_text_tables_and_answers(memory: Memory) -> None:
    memory.observe_entity(name="Rust", entity_type="language", summary="systems language")
    memory.add_alias(entity="Rust", entity_type="language", alias="rust-lang")
    memory.assert_fact(subject="Alice", subject_type="person", relation="works_at", object="Acme")
    memory.assert_fact(subject="Alice", subject_type="person", relation="works_at", object="Globex")
    memory.record_message(episode="chat-1", speaker="user", text="rust is fun")
    queries = ("rust", "rust-lang", "alice works", "globex", "fun")
    before = [
        (memory.search_entities(q), memory.search_facts(q), memory.search_messages(q))
        for q in queries
    ]
    with memory.store.read() as connection:
        tables = dump(connection)

    memory.rebuild()

    with memory.store.read() as connection:
        assert dump(connection) == tables
    assert tables["entities_fts"] and tables["facts_fts"] and tables["messages_fts"]
    assert before == [
        (memory.search_entities(q), memory.search_facts(q), memory.search_messages(q))
        for q in queries
    ]


def test_a_bulk_load_from_empty_fills_the_full_text_tables_as_the_triggers_do(
    memory: Memory, tmp_path: Path
) -> None:
    memory.observe_entity(name="Rust", entity_type="language")
    memory.add_alias(entity="Rust", entity_type="language", alias="rust-lang")
    memory.add_alias(entity="Rust", entity_type="language", alias="rustlang")
    memory.assert_fact(subject="Alice", subject_type="person", relation="works_at", object="Acme")
    memory.assert_fact(subject="Alice", subject_type="person", relation="works_at", object="Globex")
    memory.assert_fact(subject="Alice", relation="uses", object="Rust", fact="Alice codes Rust")
    memory.assert_fact(subject="Alice", relation="uses", object="Rust", fact="Alice writes Rust")
    memory.record_message(episode="chat-1", speaker="user", text="rust is fun")
    other = ReadModelStore(tmp_path / "bulk.db")

    done = Runner(memory.log, other, batch_size=2).catch_up()

    assert done.batches > 1
    with memory.store.read() as mine, other.read() as theirs:
        assert fulltext.contents(mine) == fulltext.contents(theirs)
    other.close()


def test_a_store_missing_its_full_text_tables_refills_them_when_opened(memory: Memory) -> None:
    memory.observe_entity(name="Rust", entity_type="language", summary="systems language")
    memory.add_alias(entity="Rust", entity_type="language", alias="rust-lang")
    memory.assert_fact(subject="Alice", relation="uses", object="Rust")
    memory.assert_fact(subject="Alice", relation="uses", object="Rust", fact="Alice codes Rust")
    memory.assert_fact(subject="Alice", relation="uses", object="Rust", fact="Alice uses Rust")
    memory.record_message(episode="chat-1", speaker="user", text="rust is fun")
    with memory.store.read() as connection:
        tables = fulltext.contents(connection)
    with memory.store.write() as connection:
        fulltext.drop(connection)

    reopened = ReadModelStore(memory.store.path)

    with reopened.read() as connection:
        assert fulltext.contents(connection) == tables
    assert all(tables.values())
    reopened.close()


def test_a_huge_query_is_cut_to_its_limit_not_passed_whole(graphs: Memory) -> None:
    query = "graph " * 20_000 + "unrelated"

    assert names(graphs, query) == ["Graph", "GraphQL"]


def test_a_fact_valid_in_the_past_is_found_at_that_time(memory: Memory) -> None:
    memory.assert_fact(
        subject="Alice",
        subject_type="person",
        relation="lives_in",
        object="Paris",
        valid_from=datetime(2019, 1, 1, tzinfo=UTC),
    )
    memory.assert_fact(
        subject="Alice",
        subject_type="person",
        relation="lives_in",
        object="Berlin",
        valid_from=datetime(2021, 1, 1, tzinfo=UTC),
    )

    found = memory.search_facts("paris", valid_at=datetime(2020, 1, 1, tzinfo=UTC))

    assert [h.row.object for h in found] == ["Paris"]
    assert memory.search_facts("paris") == []


def test_a_message_is_not_found_before_it_was_recorded(memory: Memory) -> None:
    memory.record_message(episode="chat-1", speaker="user", text="first words")
    *_, recorded = memory.events()
    memory.record_message(episode="chat-1", speaker="user", text="second words")

    then = memory.as_of(known_at=recorded.recorded_at)

    assert [h.text for h in then.search_messages("words")] == ["first words"]
    assert len(memory.search_messages("words")) == 2


def test_a_store_indexed_with_other_tokenizer_options_is_reindexed_when_opened(
    memory: Memory,
) -> None:
    memory.record_message(episode="c", speaker="user", text="painting sunsets")
    memory.close()
    with ReadModelStore(memory.store.path).write() as connection:
        connection.exec_driver_sql("DROP TABLE messages_fts")
        connection.exec_driver_sql(
            "CREATE VIRTUAL TABLE messages_fts USING fts5(message_id UNINDEXED, text)"
        )
    reopened = Memory.open(memory.directory, embedder=HashingEmbedder())
    assert [h.text for h in reopened.search_messages("painted")] == ["painting sunsets"]
    reopened.close()
