"""Entity and edge type parsing, and name normalization (digest section 7, items 1 and 9)."""

from __future__ import annotations

import pytest

from apexmem import ValidationError
from apexmem.domain.identities import entity_id
from apexmem.domain.names import canonical_name, cut_utf8, display_name, normalize
from apexmem.domain.types import (
    EDGE_TYPES,
    ENTITY_TYPES,
    parse_edge_type,
    parse_entity_type,
    resolve_entity_type,
)

# Edge types ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["semantic", "temporal", "causal", "entity"])
def test_the_four_lowercase_edge_types_parse_to_themselves(value: str) -> None:
    parsed = parse_edge_type(value)

    assert parsed == value


def test_exactly_the_four_magma_edge_types_exist() -> None:
    expected = {"semantic", "temporal", "causal", "entity"}

    found = set(EDGE_TYPES)

    assert found == expected


@pytest.mark.parametrize("value", ["Semantic", "sematic", "", "SEMANTIC", " semantic"])
def test_an_edge_type_that_is_not_exactly_lowercase_is_rejected(value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_edge_type(value)

    assert caught.value.field == "edge_type"
    assert caught.value.value == value
    assert repr(value) in str(caught.value)


@pytest.mark.parametrize(
    ("alias", "expected"), [("hierarchical", "entity"), ("co_occurrence", "semantic")]
)
def test_an_edge_type_alias_parses_to_its_magma_type(alias: str, expected: str) -> None:
    parsed = parse_edge_type(alias)

    assert parsed == expected


def test_an_edge_type_error_names_the_field_it_was_given() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_edge_type("bogus", field="facts[2].edge_type")

    assert caught.value.field == "facts[2].edge_type"


# Entity types -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ENTITY_TYPES)
def test_every_lowercase_entity_type_parses_strictly(value: str) -> None:
    parsed = parse_entity_type(value)

    assert parsed == value


@pytest.mark.parametrize("value", ["Person", "", "PERSON", " person", "sematic"])
def test_the_strict_entity_type_parse_rejects_anything_else(value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_entity_type(value)

    assert caught.value.field == "entity_type"
    assert caught.value.value == value


@pytest.mark.parametrize(
    ("value", "expected"),
    [("Person", "person"), ("  LANGUAGE ", "language"), ("tool", "tool")],
)
def test_the_lenient_resolve_trims_and_lowercases_a_known_type(value: str, expected: str) -> None:
    resolved = resolve_entity_type(value)

    assert resolved == (expected, True)


@pytest.mark.parametrize("value", ["unknown_type", "", "   ", "persons"])
def test_the_lenient_resolve_turns_an_unknown_type_into_concept(value: str) -> None:
    resolved = resolve_entity_type(value)

    assert resolved == ("concept", False)


# Name normalization -------------------------------------------------------------------------


def test_names_differing_only_in_case_share_one_canonical_name_and_entity() -> None:
    upper, lower = "Rust", "rust"

    canonical_upper = canonical_name("name", upper)
    canonical_lower = canonical_name("name", lower)

    assert canonical_upper == canonical_lower == "rust"
    assert entity_id("language", canonical_upper) == entity_id("language", canonical_lower)


def test_the_same_name_with_another_type_is_another_entity() -> None:
    canonical = canonical_name("name", "python")

    language, tool = entity_id("language", canonical), entity_id("tool", canonical)

    assert language != tool


@pytest.mark.parametrize("name", ["", "   ", "\x00\x00\x00", "  \u202e\u202e "])
def test_a_name_empty_after_normalization_is_rejected(name: str) -> None:
    with pytest.raises(ValidationError) as caught:
        canonical_name("subject", name)

    assert caught.value.field == "subject"
    assert caught.value.value == name
    assert "empty" in str(caught.value)


@pytest.mark.parametrize(("name", "expected"), [("R", "r"), ("Go", "go"), (" UK ", "uk")])
def test_an_asserted_name_of_one_byte_or_more_is_accepted(name: str, expected: str) -> None:
    assert canonical_name("subject", name) == expected


@pytest.mark.parametrize(("name", "expected"), [("git", "git"), ("gö", "gö"), (" Git ", "git")])
def test_a_name_of_three_bytes_or_more_is_accepted(name: str, expected: str) -> None:
    canonical = canonical_name("subject", name)

    assert canonical == expected


@pytest.mark.parametrize(
    "name",
    [
        "rust\x00lang",
        "rust\u202elang",
        "rust\u202alang",
        "rust\u2066lang",
        "rust\u200blang",
        "rust\ufefflang",
        "rust\tlang",
        "rust\nlang",
        "\u202eRUST\u202clang",
    ],
)
def test_control_and_bidi_format_characters_are_stripped(name: str) -> None:
    canonical = canonical_name("name", name)

    assert canonical == "rustlang"


@pytest.mark.parametrize("name", ["привет мир", "日本語", "naïve café"])
def test_ordinary_unicode_is_kept(name: str) -> None:
    canonical = canonical_name("name", name)

    assert canonical == name


def test_a_long_ascii_name_is_cut_to_512_bytes() -> None:
    name = "a" * 1024

    canonical = canonical_name("name", name)

    assert canonical == "a" * 512


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("é" * 300, "é" * 256),
        ("a" + "é" * 300, "a" + "é" * 255),
        ("日" * 200, "日" * 170),
        ("🔥" * 200, "🔥" * 128),
        ("ab" + "🔥" * 200, "ab" + "🔥" * 127),
    ],
)
def test_a_long_multibyte_name_is_cut_at_a_character_boundary(name: str, expected: str) -> None:
    canonical = canonical_name("name", name)

    assert canonical == expected
    assert len(canonical.encode()) <= 512


def test_cut_utf8_never_returns_more_than_the_limit_or_half_a_character() -> None:
    text = "x🔥y"

    cuts = [cut_utf8(text, limit) for limit in range(8)]

    assert cuts == ["", "x", "x", "x", "x", "x🔥", "x🔥y", "x🔥y"]


def test_the_display_name_keeps_the_casing_but_drops_controls_and_padding() -> None:
    name = "  Rust\x00Lang  "

    shown = display_name(name)

    assert shown == "RustLang"


def test_normalizing_a_canonical_name_again_changes_nothing() -> None:
    # Regression: normalize() stripped whitespace before cutting to 512 bytes, so a cut right
    # after a space left a trailing space that a second normalization removed.
    name = "a" * 511 + " b"

    once = normalize(name)

    assert normalize(once) == once
