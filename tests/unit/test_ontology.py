"""Relation canonicalization and cardinality (digest section 2.6 and section 7, item 21)."""

from __future__ import annotations

import pytest

from apexmem import ValidationError
from apexmem.domain.names import normalize_relation
from apexmem.domain.ontology import Ontology, Resolved
from apexmem.events import RelationMapped


@pytest.mark.parametrize("alias", ["employed_by", "job_at", "works_for", "works_at"])
def test_an_employment_alias_maps_to_works_at(alias: str) -> None:
    ontology = Ontology()

    resolved = ontology.resolve(alias)

    assert resolved == Resolved("works_at", unmapped=False, cardinality="one")


def test_an_unknown_relation_maps_to_itself_and_is_flagged_unmapped() -> None:
    ontology = Ontology()

    resolved = ontology.resolve("some_new_predicate")

    assert resolved == Resolved("some_new_predicate", unmapped=True, cardinality="many")


def test_an_unmapped_relation_stays_unmapped_when_resolved_from_the_cache() -> None:
    ontology = Ontology()
    first = ontology.resolve("some_new_predicate")

    second = ontology.resolve("some_new_predicate")

    assert second == first
    assert second.unmapped


def test_resolving_an_alias_twice_gives_the_same_canonical_relation() -> None:
    ontology = Ontology()

    first, second = ontology.resolve("job_at"), ontology.resolve("job_at")

    assert first.canonical == second.canonical == "works_at"


@pytest.mark.parametrize("relation", ["works_at", "lives_in", "born_in", "manages"])
def test_a_single_valued_relation_has_cardinality_one(relation: str) -> None:
    ontology = Ontology()

    cardinality = ontology.cardinality(relation)

    assert cardinality == "one"


@pytest.mark.parametrize("relation", ["owns", "depends_on", "knows", "uses", "some_new_predicate"])
def test_other_relations_have_cardinality_many(relation: str) -> None:
    ontology = Ontology()

    cardinality = ontology.cardinality(relation)

    assert cardinality == "many"


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [("resides_in", "lives_in"), ("birthplace", "born_in"), ("leads", "manages"), ("has", "owns")],
)
def test_the_default_table_maps_each_alias_to_its_canonical_relation(
    alias: str, canonical: str
) -> None:
    ontology = Ontology()

    resolved = ontology.resolve(alias)

    assert resolved.canonical == canonical
    assert not resolved.unmapped


def test_with_mapping_adds_a_relation_with_its_aliases_and_cardinality() -> None:
    ontology = Ontology()
    mapping = RelationMapped(canonical="reports_to", aliases=["answers_to"], cardinality="one")

    extended = ontology.with_mapping(mapping)

    assert extended.resolve("answers_to") == Resolved("reports_to", False, "one")
    assert extended.resolve("reports_to") == Resolved("reports_to", False, "one")
    assert extended.resolve("employed_by").canonical == "works_at"


def test_with_mapping_leaves_the_original_ontology_unchanged() -> None:
    ontology = Ontology()
    ontology.resolve("answers_to")
    mapping = RelationMapped(canonical="reports_to", aliases=["answers_to"], cardinality="one")

    ontology.with_mapping(mapping)

    assert ontology.resolve("answers_to") == Resolved("answers_to", True, "many")


def test_with_mapping_can_replace_the_cardinality_of_a_known_relation() -> None:
    ontology = Ontology()

    changed = ontology.with_mapping(RelationMapped(canonical="owns", cardinality="one"))

    assert changed.cardinality("owns") == "one"
    assert changed.resolve("has").canonical == "owns"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Works At  ", "works_at"),
        ("  Works_At  ", "works_at"),
        ("employed-by", "employed_by"),
        ("Depends \t on", "depends_on"),
        ("works\x00_at", "works_at"),
    ],
)
def test_normalize_relation_trims_lowercases_and_joins_words(raw: str, expected: str) -> None:
    normalized = normalize_relation("relation", raw)

    assert normalized == expected


@pytest.mark.parametrize("raw", ["", "   ", "\x00\u202e"])
def test_an_empty_relation_is_rejected(raw: str) -> None:
    with pytest.raises(ValidationError) as caught:
        normalize_relation("relation", raw)

    assert caught.value.field == "relation"
    assert caught.value.value == raw


def test_a_relation_over_256_bytes_is_rejected() -> None:
    raw = "r" * 257

    with pytest.raises(ValidationError) as caught:
        normalize_relation("relation", raw)

    assert caught.value.field == "relation"
    assert "256 bytes" in str(caught.value)
