"""Query arguments a caller can get wrong (text UTF-8 cannot encode, counts too large, negative
or of the wrong type, a lone string for a list of edge types) raise ValidationError naming
the argument, in the library and on the command line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from apexmem import Memory, ValidationError
from apexmem.cli import cli
from apexmem.service.arguments import MAX_COUNT, checked_count, checked_edge_types, checked_text

SURROGATE = "Rust \ud800"

TEXTS: list[tuple[str, Callable[[Any], Any], str]] = [  # Any: wrong values on purpose
    ("recall", lambda m: m.recall(SURROGATE), "query"),
    ("search_facts", lambda m: m.search_facts(SURROGATE), "query"),
    ("search_entities", lambda m: m.search_entities(SURROGATE), "query"),
    ("search_messages", lambda m: m.search_messages(SURROGATE), "query"),
    ("facts_about", lambda m: m.facts_about(SURROGATE), "entity"),
    (
        "facts_about entity_type",
        lambda m: m.facts_about("Alice", entity_type=SURROGATE),
        "entity_type",
    ),
    ("edges_at_timestamp", lambda m: m.edges_at_timestamp(SURROGATE, at=None), "entity"),
    ("traverse", lambda m: m.traverse(SURROGATE), "start"),
    ("entities", lambda m: m.entities(SURROGATE), "query"),
    ("entities entity_type", lambda m: m.entities(entity_type=SURROGATE), "entity_type"),
    ("episodes_for", lambda m: m.episodes_for(SURROGATE), "entity"),
    ("edge_history", lambda m: m.edge_history(subject="Alice", relation=SURROGATE), "relation"),
    ("similar", lambda m: m.similar(SURROGATE), "text"),
    ("similar kind", lambda m: m.similar("Rust", kind=SURROGATE), "kind"),
    ("similar_exact", lambda m: m.similarity.similar_exact(SURROGATE, kind="fact", k=1), "text"),
]

HUGE = 2**63

COUNTS: list[tuple[str, Callable[[Any], Any], str]] = [  # Any: wrong values on purpose
    ("search_facts 2**63", lambda m: m.search_facts("Rust", limit=HUGE), "limit"),
    ("search_entities 2**63", lambda m: m.search_entities("Rust", limit=HUGE), "limit"),
    ("search_messages 2**63", lambda m: m.search_messages("Rust", limit=HUGE), "limit"),
    ("entities 2**63", lambda m: m.entities(limit=HUGE), "limit"),
    ("entities -5", lambda m: m.entities(limit=-5), "limit"),
    ("search_entities -1", lambda m: m.search_entities("Rust", limit=-1), "limit"),
    ("search_facts '3'", lambda m: m.search_facts("Rust", limit="3"), "limit"),
    ("search_messages None", lambda m: m.search_messages("Alice", limit=None), "limit"),
    ("search_facts True", lambda m: m.search_facts("Rust", limit=True), "limit"),
    (
        "edge_history 2**63",
        lambda m: m.edge_history(subject="A", relation="r", limit=HUGE),
        "limit",
    ),
    ("traverse 2**63", lambda m: m.traverse("Alice", max_hops=HUGE), "max_hops"),
    ("traverse 1.5", lambda m: m.traverse("Alice", max_hops=1.5), "max_hops"),
    ("traverse '2'", lambda m: m.traverse("Alice", max_hops="2"), "max_hops"),
    (
        "bfs_at_timestamp -1",
        lambda m: m.bfs_at_timestamp("Alice", max_hops=-1, at=None),
        "max_hops",
    ),
    ("similar 10**9", lambda m: m.similar("Rust", k=10**9), "k"),
    ("similar_exact 2**63", lambda m: m.similarity.similar_exact("Rust", kind="fact", k=HUGE), "k"),
]

EDGE_TYPES: list[tuple[str, Callable[[Any], Any], str]] = [  # Any: wrong values on purpose
    ("traverse 'semantic'", lambda m: m.traverse("Alice", edge_types="semantic"), "edge_types"),
    ("traverse None", lambda m: m.traverse("Alice", edge_types=None), "edge_types"),
    ("traverse [5]", lambda m: m.traverse("Alice", edge_types=[5]), "edge_types[0]"),
    ("search_facts 'semantic'", lambda m: m.search_facts("x", edge_types="semantic"), "edge_types"),
    (
        "search_facts [{}]",
        lambda m: m.search_facts("x", edge_types=["causal", {}]),
        "edge_types[1]",
    ),
]


RULES = {"text": "UTF-8", "count": f"{MAX_COUNT:,}", "edge types": "is not"}
"""What each kind of argument's refusal says (a list, or its item, "is not" what it must be)."""
CASES = [
    pytest.param(call, field, RULES[kind], id=f"{kind}: {name}")
    for kind, cases in (("text", TEXTS), ("count", COUNTS), ("edge types", EDGE_TYPES))
    for name, call, field in cases
]


@pytest.mark.parametrize(("call", "field", "rule"), CASES)
def test_a_wrong_argument_is_refused_naming_it_and_its_rule(
    memory: Memory, call: Callable[[Memory], Any], field: str, rule: str
) -> None:
    memory.assert_fact(subject="Alice", relation="uses", object="Rust")

    with pytest.raises(ValidationError) as caught:
        call(memory)

    assert caught.value.field == field
    assert rule in caught.value.rule


def test_counts_at_the_bounds_are_answered(memory: Memory) -> None:
    memory.assert_fact(subject="Alice", relation="uses", object="Rust", fact="Alice uses Rust")

    found = memory.search_facts("Rust", limit=MAX_COUNT)
    none = memory.entities(limit=0)
    walked = memory.traverse("Alice", max_hops=MAX_COUNT, edge_types=("semantic",))

    assert [f.row.fact for f in found] == ["Alice uses Rust"]
    assert none == []
    assert {e.name for e in walked.entities} == {"Alice", "Rust"}


def test_checked_text_keeps_text_any_utf8_can_hold() -> None:
    text = "Zoë 東京 🎻"

    assert checked_text("query", text) is text


def test_checked_count_refuses_a_bool_and_honours_its_minimum() -> None:
    with pytest.raises(ValidationError, match="k: True is not a count"):
        checked_count("k", True)
    with pytest.raises(ValidationError, match="from 1 to"):
        checked_count("limit", 0, minimum=1)

    assert checked_count("limit", MAX_COUNT) == MAX_COUNT


def test_checked_edge_types_maps_aliases() -> None:
    assert checked_edge_types("edge_types", ("hierarchical", "causal")) == ["entity", "causal"]


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (["recall", "Rust", "--limit", str(2**63 - 1)], "--limit"),
        (["recall", "Rust", "--hops", str(MAX_COUNT + 1)], "--hops"),
        (["entities", "--limit", str(MAX_COUNT + 1)], "--limit"),
        (["traverse", "Rust", "--hops", str(2**63 - 1)], "--hops"),
        (["log", "--limit", str(2**63 - 1)], "--limit"),
    ],
)
def test_a_cli_count_past_the_bound_is_a_usage_error_naming_the_option(
    tmp_path: Path, command: list[str], option: str
) -> None:
    (tmp_path / "mem").mkdir()
    (tmp_path / "mem" / "apexmem.toml").write_text('[memory.vectors]\nembedder = "hashing"\n')

    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "mem"), *command])

    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output
    assert f"at most {MAX_COUNT}" in result.output
