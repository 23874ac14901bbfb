"""The recall's read path: rarest words first, multi-word seeds, and a BFS that stops early
without changing its answer. Real SQLite and FTS5; the hashing embedder stands in for WordLlama.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Column, Integer, MetaData, String, Table, bindparam, create_engine, select

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.recall import composite_score
from apexmem.readmodels import recall as reads
from apexmem.readmodels.moment import Lens
from apexmem.readmodels.prepared import Prepared, id_of
from apexmem.readmodels.traverse import Walked, expand


def fact(subject: str, relation: str, obj: str, **extra: Any) -> dict[str, Any]:
    return {"subject": subject, "relation": relation, "object": obj, **extra}


def test_a_common_word_gives_way_to_the_rare_ones(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past RANKED_ROWS matches a word is left out when rarer words of the question match."""
    memory.assert_facts(
        [fact(f"Person {i}", "works_on", "Project", fact=f"Person {i} works on the project")
         for i in range(12)]
        + [fact("Zed", "likes", "Tea", fact="Zed likes oolong tea")]
    )  # fmt: skip
    monkeypatch.setattr(reads, "RANKED_ROWS", 5)
    with memory.store.read() as connection:
        found = reads.ranked_facts(connection, ["project", "oolong"], size=10)
        assert [key.said or "" for key, _ in found] == [""]
        only_common = reads.ranked_facts(connection, ["project"], size=10)
        one_window = reads.ranked_facts(connection, ["project"], size=5)
    # Alone, the common word is ranked over its newest RANKED_ROWS matches, then over the
    # next RANKED_ROWS older ones while fewer than `size` are found.
    positions = sorted((f.position for f in memory.facts_about("Project")), reverse=True)
    assert sorted((key.position for key, _ in one_window), reverse=True) == positions[:5]
    assert [key for key, _ in only_common[:5]] == [key for key, _ in one_window]
    assert sorted((key.position for key, _ in only_common), reverse=True) == positions[:10]


def test_every_matching_fact_is_ranked_while_the_words_are_rare(memory: Memory) -> None:
    memory.assert_facts(
        [
            fact("Ann", "uses", "Rust", fact="Ann writes Rust every day"),
            fact("Ben", "uses", "Golang", fact="Ben writes Golang"),
            fact("Cyra", "uses", "Rust", fact="Cyra reads about Rust"),
        ]
    )
    with memory.store.read() as connection:
        found = reads.ranked_facts(connection, ["writes", "rust"], size=10)
    # "Ann writes Rust" holds both words: first; the others hold one each.
    assert len(found) == 3
    assert found[0][0].fact_id == memory.facts_about("Ann")[0].fact_id.hex


def test_a_name_of_several_words_seeds_the_entity_holding_them_all(memory: Memory) -> None:
    people = ["Ada Byron", "Ada King", "Ada Lovelace", "Grace Lovelace", "Ada Smith", "Ada Jones"]
    memory.assert_facts(
        [fact(p, "works_at", f"Org {i}", subject_type="person") for i, p in enumerate(people)]
    )
    found = memory.recall("Who does Ada Lovelace work with?", limit=2)
    assert found.seeds[0] == "Ada Lovelace"


def _score(edge: Walked, hop: int, match: float) -> float:
    return composite_score(match, hop, edge.confidence, edge.edge_type)


@settings(max_examples=30)
@given(graph=st.randoms(use_true_random=False), keep=st.integers(1, 6), hops=st.integers(1, 3))
def test_stopping_early_keeps_the_best_edges_of_a_full_expansion(
    tmp_path_factory: pytest.TempPathFactory, graph: random.Random, keep: int, hops: int
) -> None:
    """With the true ceiling (the largest type weight) the pruned BFS keeps what one that
    walks everything (an infinite ceiling) keeps, on random graphs of 10 nodes and 30 edges."""
    types = ["semantic", "causal", "temporal", "entity"]
    edges = [(graph.randrange(10), graph.randrange(10)) for _ in range(30)]
    with Memory.open(tmp_path_factory.mktemp("bfs"), embedder=HashingEmbedder(64)) as memory:
        memory.assert_facts(
            [
                fact(
                    f"Node{s}",
                    f"r{i}",
                    f"Node{o}",
                    edge_type=graph.choice(types),
                    confidence=graph.choice([0.3, 0.6, 0.9, 1.0]),
                )
                for i, (s, o) in enumerate(edges)
                if s != o
            ]
            or [fact("Node0", "r", "Node1")]  # a degenerate draw: every edge a loop
        )
        ids = {e.name: e.entity_id for e in memory.entities()}
        start = {ids[n]: graph.choice([0.2, 0.5, 1.0]) for n in graph.sample(sorted(ids), 2)}
        with memory.store.read() as connection:
            runs = [
                expand(connection, start, score=_score, keep=keep, ceiling=c, max_hops=hops)
                for c in (1.2, math.inf)
            ]
    pruned, full = ([(round(s.score, 12), s.edge.fact_id) for s in r.edges] for r in runs)
    assert pruned == full


def test_the_candidate_keys_tell_notes_and_values_apart(memory: Memory) -> None:
    memory.assert_facts(
        [
            {"subject": "Ann", "relation": "note", "fact": "Ann paints on Sundays"},
            {"subject": "Ann", "relation": "age", "value": "41"},
            fact("Ann", "knows", "Ben"),
        ]
    )
    with memory.store.read() as connection:
        ids = [f.fact_id.hex for f in memory.facts_about("Ann")]
        keys = reads.visible_facts(connection, ids)
    said = sorted((k.relation, k.said) for k in keys.values())
    assert said == [("age", "41"), ("knows", None), ("note", "Ann paints on Sundays")]
    assert all(UUID(k.fact_id).hex == k.fact_id for k in keys.values())


def test_a_hit_carries_the_same_row_the_queries_give(memory: Memory) -> None:
    memory.assert_facts(
        [
            fact("Ann", "uses", "Rust", fact="Ann writes Rust", ref="D1:2", episode="chat"),
            {"subject": "Ann", "relation": "age", "value": "41"},
        ]
    )
    found = memory.recall("What does Ann write? How old is Ann?", limit=5)
    rows = {f.fact_id: f for f in memory.facts_about("Ann")}
    hits = [h for h in found if h.kind == "fact"]
    assert {h.item_id for h in hits} == set(rows)
    assert all(h.fact == rows[h.item_id] for h in hits)


def test_a_prepared_statement_lays_out_its_parameters_as_sqlalchemy_expands_them(
    tmp_path: Path,
) -> None:
    # The expanded text is kept per IN-list length and the parameters are laid out by hand:
    # they must equal SQLAlchemy's own expansion for every length, with defaults filled in.
    table = Table("t", MetaData(), Column("a", String), Column("b", Integer))
    statement = Prepared(
        lambda: select(table.c.a).where(
            table.c.a.in_(bindparam("xs", expanding=True)),
            table.c.b > bindparam("low"),
            table.c.b.in_(bindparam("ys", expanding=True)),
            table.c.a != "z",  # a literal: a bind parameter with its own value
        )
    )
    engine = create_engine(f"sqlite:///{tmp_path / 'p.db'}")
    rows = [("a", 1), ("b", 2), ("c", 0), ("d", 3), ("z", 1)]
    with engine.begin() as connection:
        table.metadata.create_all(connection)
        connection.execute(table.insert(), [{"a": a, "b": b} for a, b in rows])
    with engine.connect() as connection:
        compiled = select(table.c.a).compile(dialect=connection.dialect)
        assert compiled.positional
        for xs, ys in [([], [1]), (["a"], [1, 2]), (["a", "b", "c"], []), (["d"], [3])]:
            params = {"xs": xs, "low": 0, "ys": ys}
            text, args = statement.expand(connection, params)
            state = statement._compiled[("sqlite", ())].construct_expanded_state(params)
            assert (text, list(args)) == (state.statement, list(state.positional_parameters))
            wanted = {a for a, b in rows if a in xs and b > 0 and b in ys and a != "z"}
            assert {a for (a,) in statement.rows(connection, params)} == wanted


def test_superseded_matches_take_no_place_among_the_ranked_facts(memory: Memory) -> None:
    # Ann's employer changed 40 times: 39 of her matches are superseded versions, ranked
    # no lower than the believed ones; only the believed ones are counted and returned.
    memory.assert_facts(
        [
            fact("Ann Lee", "works_at", f"Org {i:02}", fact=f"Ann works at Org {i:02}",
                 valid_from=f"20{i // 12 + 10}-{i % 12 + 1:02}-01T00:00:00Z")
            for i in range(40)
        ]
        + [fact("Bob Ray", "works_at", "Org B", fact="Bob works at Org B")]
    )  # fmt: skip
    current = {f.fact_id.hex for name in ("Ann Lee", "Bob Ray") for f in memory.facts_about(name)}

    with memory.store.read() as connection:
        found = reads.ranked_facts(connection, ["works"], size=2)
        every = reads.ranked_facts(connection, ["works"], size=reads.RANKED_ROWS)

    assert len(current) == 2
    assert {key.fact_id for key, _ in found} == current
    assert [key.fact_id for key, _ in every] == [key.fact_id for key, _ in found]


def test_a_fact_told_in_several_sentences_is_ranked_once(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each of these facts is told again in other words: a row per sentence in the index,
    # so a page of ranked rows holds fewer facts than rows and a longer page is read.
    told = [fact(f"Person {i}", "likes", "Tea", fact=f"Person {i} likes tea") for i in range(4)]
    memory.assert_facts(told)
    memory.assert_facts(
        [{**f, "fact": f"{f['subject']} really likes tea, strong tea, tea"} for f in told]
    )
    monkeypatch.setattr(reads, "_SPARE", 1)

    with memory.store.read() as connection:
        found = reads.ranked_facts(connection, ["tea"], size=4)

    assert sorted(key.subject_id for key, _ in found) == sorted(
        memory.facts_about(f"Person {i}")[0].subject_id.hex for i in range(4)
    )
    assert [score for _, score in found] == sorted((s for _, s in found), reverse=True)


@given(st.uuids())
def test_a_stored_id_reads_back_as_the_same_uuid(value: UUID) -> None:
    found = id_of(value.hex)
    assert (found, hash(found), str(found), found.version) == (
        value,
        hash(value),
        str(value),
        value.version,
    )


@pytest.mark.parametrize("types", [(), ("causal",)])
def test_an_entity_s_structure_counts_its_edges_at_both_ends(
    memory: Memory, types: tuple[str, ...]
) -> None:
    memory.assert_facts(
        [
            fact("Ann", "knows", "Ben"),
            fact("Cyd", "knows", "Ann"),
            fact("Ann", "caused", "Outage", edge_type="causal"),
            fact("Ben", "caused", "Outage", edge_type="causal"),
        ]
    )
    ids = {e.name: e.entity_id for e in memory.entities()}

    with memory.store.read() as connection:
        found = reads.edge_structure(
            connection, [ids["Ann"], ids["Outage"]], lens=Lens(edge_types=types)
        )

    if types:
        assert found == {ids["Ann"]: (1, 1), ids["Outage"]: (2, 1)}
    else:
        assert found == {ids["Ann"]: (3, 2), ids["Outage"]: (2, 1)}
