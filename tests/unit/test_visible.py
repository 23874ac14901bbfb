"""The pattern the schemas give names (`VISIBLE`) holds exactly when normalization leaves
something of the name, for every text of the Basic Multilingual Plane."""

from __future__ import annotations

import re

from hypothesis import assume, given
from hypothesis import strategies as st

from apexmem.domain.names import normalize, normalize_relation
from apexmem.wire_fields import VISIBLE

_SPARSE = st.sampled_from(" \t\n\x00\x14\x85\xa0\xad\u061c\u200b\u202e\u2060\u3000\ufeffaZ-")
_TEXT = st.text(st.one_of(_SPARSE, st.characters(max_codepoint=0xFFFF)), max_size=12)


@given(_TEXT)
def test_a_name_matches_the_pattern_exactly_when_normalization_keeps_a_character(
    name: str,
) -> None:
    matched = re.search(VISIBLE, name) is not None

    kept = normalize(name) != ""

    assert matched == kept


@given(_TEXT)
def test_a_relation_matching_the_pattern_is_never_empty_after_normalization(
    relation: str,
) -> None:
    assume(re.search(VISIBLE, relation) is not None)

    normalized = normalize_relation("relation", relation)

    assert normalized != ""
