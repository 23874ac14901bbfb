"""Grams of unsegmented scripts: a question's words are in the text they came from, and
an entity's names can be cut one by one or together."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from apexmem.domain.search_text import gram_text, search_terms

_MIXED = st.text(
    alphabet=st.sampled_from("北京東京にはのア서울에สวัสดีครับaZé1 ,。・-ｶﾀ"), max_size=30
)


@given(_MIXED, _MIXED)
def test_the_grams_of_texts_joined_by_a_space_are_their_grams_joined(a: str, b: str) -> None:
    assert gram_text(f"{a} {b}") == " ".join(g for g in (gram_text(a), gram_text(b)) if g)


@given(_MIXED)
def test_every_word_of_a_text_asked_as_a_question_is_indexed_for_that_text(text: str) -> None:
    tokenized = set(re.findall(r"[^\W_]+", text.casefold()))  # the tokenizers' words

    assert set(search_terms(text)) <= set(gram_text(text).split()) | tokenized


@given(_MIXED)
def test_a_question_s_words_are_letters_and_digits_only(text: str) -> None:
    assert all(term.isalnum() for term in search_terms(text))
    assert all(gram.isalnum() for gram in gram_text(text).split())
