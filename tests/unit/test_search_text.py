"""The full-text query sanitizer: the digest's cases (section 7, item 7) and the byte limit."""

from __future__ import annotations

import pytest

from apexmem.domain.search_text import (
    MAX_QUERY_BYTES,
    MAX_TERMS,
    content_terms,
    gram_text,
    search_terms,
)
from apexmem.readmodels.fulltext import any_query, match_query


@pytest.mark.parametrize("query", ["", "   ", "***", "(((", '"""', "^:*()", "\t\n"])
def test_an_empty_or_punctuation_only_query_has_no_terms(query: str) -> None:
    assert search_terms(query) == []


def test_operator_characters_never_reach_the_engine() -> None:
    assert search_terms('graph"()*:^') == ["graph"]


def test_the_boolean_operator_words_are_dropped_in_any_case() -> None:
    assert search_terms("graph OR unrelated") == ["graph", "unrelated"]
    assert search_terms("rust AND NOT go NEAR near cargo") == ["rust", "go", "cargo"]


def test_a_hyphenated_alias_becomes_the_words_the_tokenizer_indexes() -> None:
    assert search_terms("rust-lang") == ["rust", "lang"]
    assert search_terms("RUST-LANG") == ["rust", "lang"]


def test_every_word_counts_short_ones_and_numbers_included() -> None:
    assert search_terms("Go is a language") == ["go", "is", "a", "language"]
    assert search_terms("Who uses Python 2?") == ["who", "uses", "python", "2"]


def test_content_terms_keep_short_names_and_numbers_but_not_short_function_words() -> None:
    assert content_terms("Which company uses Windows 10 in the UK?") == [
        "company",
        "uses",
        "windows",
        "10",
        "uk",
    ]
    assert content_terms("Is it a Go shop?") == ["go", "shop"]


def test_a_short_word_is_matched_whole_and_a_longer_one_also_as_a_prefix() -> None:
    assert match_query(["python", "2"]) == '("python" OR "python"*) AND ("2")'
    assert any_query(["go", "rust"]) == '"go" OR "rust" OR "rust"*'


def test_a_query_of_only_short_words_keeps_them() -> None:
    assert search_terms("go to") == ["go", "to"]


def test_words_are_lowercased_and_repeats_dropped_in_query_order() -> None:
    assert search_terms("Rust rust RUST cargo Café") == ["rust", "cargo", "café"]


def test_underscores_separate_words_as_the_tokenizer_does() -> None:
    assert search_terms("works_at") == ["works", "at"]


def test_a_huge_query_is_cut_to_the_byte_limit_and_the_first_terms() -> None:
    query = "é" * (MAX_QUERY_BYTES * 25)

    [term] = search_terms(query)

    assert len(term.encode()) == MAX_QUERY_BYTES
    assert len(search_terms(" ".join(f"word{i}" for i in range(1000)))) == MAX_TERMS


def test_a_word_cut_by_the_limit_is_cut_at_a_character_boundary() -> None:
    query = "a" * (MAX_QUERY_BYTES - 1) + "é tail"

    [term] = search_terms(query)

    assert term == "a" * (MAX_QUERY_BYTES - 1)


def test_a_run_of_an_unsegmented_script_is_searched_as_its_pairs_of_characters() -> None:
    assert search_terms("我住在北京") == ["我住", "住在", "在北", "北京"]
    assert search_terms("Where is 北京?") == ["where", "is", "北京"]
    assert search_terms("서울에") == ["서울", "울에"]
    assert search_terms("京") == ["京"]


def test_thai_vowel_signs_and_half_width_katakana_are_cut_as_the_index_cuts_them() -> None:
    assert search_terms("สวัสดี") == ["สว", "วส", "สด"]
    assert search_terms("ｶﾀｶﾅ") == ["カタ", "タカ", "カナ"]


def test_the_index_stores_every_character_and_pair_and_the_words_written_against_a_run() -> None:
    assert gram_text("Alice住在北京, Bob") == "alice 住 在 北 京 住在 在北 北京"
    assert gram_text("Alice lives in Paris") == ""
