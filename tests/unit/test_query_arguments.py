"""Queries given a value of the wrong type raise ValidationError naming it, never an
AttributeError from somewhere inside."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from apexmem import Memory, ValidationError

CALLS: list[tuple[str, Callable[[Any], Any], str]] = [  # Any: wrong types on purpose
    ("facts_about(123)", lambda m: m.facts_about(123), "entity"),
    ("facts_about(None)", lambda m: m.facts_about(None), "entity"),
    ("recall(None)", lambda m: m.recall(None), "query"),
    ("search_facts(5)", lambda m: m.search_facts(5), "query"),
    ("search_entities(5)", lambda m: m.search_entities(5), "query"),
    ("search_messages(b'x')", lambda m: m.search_messages(b"Alice"), "query"),
    ("entities(5)", lambda m: m.entities(5), "query"),
    ("traverse(5)", lambda m: m.traverse(5), "start"),
    ("edge_history", lambda m: m.edge_history(subject=None, relation="knows"), "subject"),
    ("episodes_for(5)", lambda m: m.episodes_for(5), "entity"),
    ("valid_at=123", lambda m: m.facts_about("Alice", valid_at=123), "valid_at"),
    ("as_of(known_at=123)", lambda m: m.as_of(known_at=123), "known_at"),
    ("diff(1, 2)", lambda m: m.diff(1, 2), "since"),
    ("history(fact=123)", lambda m: m.history(fact=123), "fact"),
    ("retrieval_counts", lambda m: m.retrieval_counts(["xyz"]), "fact_ids[0]"),
    ("similar(k=-1)", lambda m: m.similar("Alice", k=-1), "k"),
    ("similar(None)", lambda m: m.similar(None), "text"),
]


@pytest.mark.parametrize(("name", "call", "field"), CALLS, ids=[c[0] for c in CALLS])
def test_a_query_argument_of_the_wrong_type_is_named(
    memory: Memory, name: str, call: Callable[[Memory], Any], field: str
) -> None:
    memory.assert_fact(subject="Alice", relation="knows", object="Bobby")

    with pytest.raises(ValidationError) as caught:
        call(memory)

    assert caught.value.field == field, name
