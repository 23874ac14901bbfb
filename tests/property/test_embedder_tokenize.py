"""WordLlama's few-text tokenization (one text after another) is the thread pool's, exactly."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem.embedders import _IN_TURN_UP_TO, WordLlamaEmbedder, _model, in_turn

TEXTS = st.lists(st.text(max_size=80), min_size=1, max_size=12)


def encoded(encodings: list[Any]) -> list[tuple[list[int], list[int]]]:
    return [(e.ids, e.attention_mask) for e in encodings]


def pooled(model: Any, texts: list[str]) -> Any:
    """WordLlama's own embedding of `texts`, through whatever `tokenize` the model has."""
    return model.embed(texts, norm=False, batch_size=256)


@settings(max_examples=60, deadline=None)
@given(texts=TEXTS)
def test_a_few_texts_encode_in_turn_exactly_as_the_batch_encodes_them(texts: list[str]) -> None:
    model = _model()
    tokenizer = model.tokenizer
    batched = tokenizer.encode_batch(texts, is_pretokenized=False, add_special_tokens=False)

    in_order = in_turn(tokenizer, lambda chosen: ["batched"] * len(chosen))(texts)

    if len(texts) > _IN_TURN_UP_TO:
        assert in_order == ["batched"] * len(texts)  # many texts go to the thread pool
    else:
        assert encoded(in_order) == encoded(batched)


@settings(max_examples=20, deadline=None)
@given(texts=st.lists(st.text(min_size=1, max_size=80), min_size=1, max_size=5))
def test_the_embedder_gives_the_vectors_of_batch_tokenization(texts: list[str]) -> None:
    model = _model()
    tokenize = model.tokenize
    try:
        model.tokenize = lambda chosen: model.tokenizer.encode_batch(
            [chosen] if isinstance(chosen, str) else chosen,
            is_pretokenized=False,
            add_special_tokens=False,
        )
        expected = pooled(model, texts)
    finally:
        model.tokenize = tokenize

    assert np.array_equal(pooled(model, texts), expected, equal_nan=True)
    assert WordLlamaEmbedder().embed(texts).shape == (len(texts), 256)
