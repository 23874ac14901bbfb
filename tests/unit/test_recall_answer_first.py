"""The answer first: the relation a question asks about ranks first, `relations` and
`relation` filter, `min_score` drops the padding, and bad arguments are refused."""

from __future__ import annotations

import math

import pytest

from apexmem import Memory, ValidationError
from apexmem.domain.recall.predicates import asked_relations


@pytest.fixture
def alice(memory: Memory) -> Memory:
    memory.assert_fact(
        subject="Alice",
        subject_type="person",
        relation="uses",
        object="Rust",
        fact="Alice uses Rust",
    )
    memory.assert_fact(
        subject="Alice",
        subject_type="person",
        relation="works_at",
        object="Globex",
        object_type="organization",
        fact="Alice works at Globex",
    )
    memory.assert_fact(
        subject="Alice",
        subject_type="person",
        relation="likes",
        object="Tea",
        fact="Alice likes tea",
    )
    return memory


def test_a_questions_verb_names_the_relation_it_asks_about() -> None:
    assert asked_relations(["where", "does", "alice", "work"]) == ["works_at"]
    assert asked_relations(["who", "lives", "in", "paris"]) == ["lives_in"]
    assert asked_relations(["which", "tools", "does", "bob", "use"]) == ["uses"]
    assert asked_relations(["tell", "me", "about", "bob"]) == []


def test_the_fact_of_the_relation_asked_about_comes_first(alice: Memory) -> None:
    found = alice.recall("Where does Alice work?", limit=3)

    assert found[0].text == "Alice works at Globex"
    assert "the relation asked about (works_at)" in found[0].why


def test_relations_keep_only_facts_of_those_relations_mapped_by_the_ontology(
    alice: Memory,
) -> None:
    alice.record_message(episode="c1", speaker="user", text="Alice uses Rust daily")

    found = alice.recall("Alice", relations=["employed_by", "likes"], limit=10)

    assert {h.fact.relation for h in found if h.fact} == {"works_at", "likes"}
    assert all(h.kind == "fact" for h in found)


def test_facts_about_can_ask_for_one_relation(alice: Memory) -> None:
    found = alice.facts_about("Alice", relation="works_for")

    assert [f.fact for f in found] == ["Alice works at Globex"]


def test_min_score_drops_hits_far_below_the_best(alice: Memory) -> None:
    everything = alice.recall("Where does Alice work?", limit=10)
    best_only = alice.recall("Where does Alice work?", limit=10, min_score=1.0)

    assert len(everything) > 1
    assert [h.text for h in best_only] == [everything[0].text]


@pytest.mark.parametrize("value", [-0.1, 1.5, math.nan, "high", True])
def test_a_min_score_outside_zero_to_one_is_refused(alice: Memory, value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        alice.recall("Alice", min_score=value)  # type: ignore[arg-type]

    assert caught.value.field == "min_score"


def test_an_unknown_relation_is_refused_naming_the_argument(alice: Memory) -> None:
    with pytest.raises(ValidationError) as recalled:
        alice.recall("Alice", relations=["works_at", "flies_to"])
    with pytest.raises(ValidationError) as asked:
        alice.facts_about("Alice", relation="flies_to")

    assert recalled.value.field == "relations"
    assert recalled.value.value == "flies_to"
    assert asked.value.field == "relation"


def test_the_context_block_says_when_a_fact_held_and_when_a_message_was_said(
    memory: Memory,
) -> None:
    memory.assert_fact(
        subject="Bob",
        subject_type="person",
        relation="works_at",
        object="Initech",
        fact="Bob works at Initech",
        valid_from="2019-03-01T00:00:00Z",
        valid_until="2021-06-30T00:00:00Z",
    )
    memory.assert_fact(
        subject="Bob",
        subject_type="person",
        relation="lives_in",
        object="Oslo",
        fact="Bob lives in Oslo",
        valid_from="2023-06-01T00:00:00Z",
    )
    memory.record_message(
        episode="c1", speaker="Bob", text="Oslo is cold", at="2023-05-08T10:00:00Z"
    )

    block = memory.format_context(
        memory.recall("Bob Initech Oslo", limit=5, valid_at="2020-01-01T00:00:00Z")
    )
    now = memory.format_context(memory.recall("Bob Oslo", limit=5))

    assert "Bob works at Initech [2019-03-01 to 2021-06-30]" in block
    assert "Bob lives in Oslo [since 2023-06-01]" in now
    assert "Bob: Oslo is cold [said 2023-05-08]" in now


@pytest.fixture
def jobs(memory: Memory) -> Memory:
    for place, start, end in (("Initech", "2017", "2020"), ("Globex", "2020", None)):
        memory.assert_fact(
            subject="Carol",
            subject_type="person",
            relation="works_at",
            object=place,
            object_type="organization",
            fact=f"Carol works at {place}",
            valid_from=f"{start}-01-01T00:00:00Z",
            valid_until=None if end is None else f"{end}-01-01T00:00:00Z",
        )
    return memory


def test_a_year_in_the_question_is_the_valid_time_its_facts_are_recalled_at(
    jobs: Memory,
) -> None:
    then = jobs.recall("Where did Carol work in 2019?", limit=3)
    now = jobs.recall("Where does Carol work?", limit=3)

    assert then[0].text == "Carol works at Initech"
    assert "valid time asked about: 2019-01-01 to 2020-01-01 ('in 2019')" in then[0].why
    assert now[0].text == "Carol works at Globex"


def test_relative_times_count_from_the_reference_time(jobs: Memory) -> None:
    found = jobs.recall(
        "Where did Carol work last year?", limit=3, reference_time="2019-06-01T00:00:00Z"
    )

    assert found[0].text == "Carol works at Initech"


def test_a_window_that_ends_before_it_starts_is_refused(jobs: Memory) -> None:
    with pytest.raises(ValidationError) as caught:
        jobs.recall("Carol", window=("2020-01-01T00:00:00Z", "2019-01-01T00:00:00Z"))

    assert caught.value.field == "window"
