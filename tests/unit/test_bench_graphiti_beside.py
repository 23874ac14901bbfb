"""bench/graphiti_beside.py: the facts both sides get, the LLM double's answers, apexmem's side.

Graphiti itself is not installed here (it runs in its own virtualenv); what is checked is
what the comparison rests on: the same distinct facts for a seed, answers that Graphiti's
pydantic response models accept, and apexmem's side measuring every call it was given.
"""

from enum import Enum

from bench_scripts import load
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

beside = load("graphiti_beside")


@settings(max_examples=25, deadline=None)
@given(size=st.integers(min_value=1, max_value=400), seed=st.integers(0, 10_000))
def test_the_facts_are_distinct_without_self_loops_and_the_same_for_a_seed(
    size: int, seed: int
) -> None:
    facts = beside.triples(size, seed)

    assert len({f[:3] for f in facts}) == size
    assert all(subject != obj for subject, _, obj, _ in facts)
    assert facts == beside.triples(size, seed)


class Kind(Enum):
    SAME = "same"
    OTHER = "other"


class Resolution(BaseModel):
    id: int
    duplicate_idx: int
    name: str
    kind: Kind
    note: str | None


class Resolutions(BaseModel):
    entity_resolutions: list[Resolution]
    first: Resolution
    contradicted_facts: list[int]
    sure: bool
    score: float = 0.5


def test_the_doubles_answer_is_valid_for_a_nested_response_model() -> None:
    schema = Resolutions.model_json_schema()

    answer = beside._minimal(schema, schema.get("$defs", {}))

    parsed = Resolutions.model_validate(answer)
    assert parsed.entity_resolutions == [] and parsed.contradicted_facts == []
    assert parsed.first.duplicate_idx == -1 and parsed.first.note is None


def test_apexmem_side_times_every_add_query_and_walk() -> None:
    facts = beside.triples(40, 3)
    asked, walks = beside.queries(facts, 5, 3), beside.starts(facts, 5, 3)

    run = beside.measure_apexmem(facts, asked, walks, 2)

    assert [run["add"]["n"], run["search"]["n"], run["walk"]["n"]] == [40, 5, 5]
    assert run["walk"]["mean_facts"] >= 1
