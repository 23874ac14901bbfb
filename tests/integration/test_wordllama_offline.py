"""WordLlama loads from the files inside the installed wheel, with the network unreachable."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from apexmem import Memory
from apexmem import embedders as embedders_module
from apexmem.embedders import WordLlamaEmbedder, wordllama_files


class NetworkAttempted(OSError):
    """Something tried to reach the network (an OSError, as an unreachable network raises)."""


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every connect and name lookup is refused and recorded; the model loads afresh."""
    attempts: list[str] = []

    def refuse(name: str) -> Callable[..., Any]:
        def refused(*args: Any, **kwargs: Any) -> Any:
            attempts.append(f"{name}{args[1:] if name.startswith('socket.') else args}")
            raise NetworkAttempted(f"{name} called with {args}")

        return refused

    monkeypatch.setattr(socket.socket, "connect", refuse("socket.connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("socket.connect_ex"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedders_module._model.cache_clear()
    yield attempts
    embedders_module._model.cache_clear()


def test_wordllama_ships_its_weights_and_tokenizer_in_the_wheel() -> None:
    root = wordllama_files()

    assert (root / "weights" / "l2_supercat_256.safetensors").is_file()
    assert (root / "tokenizers" / "l2_supercat_tokenizer_config.json").is_file()


def test_wordllama_loads_offline_and_puts_the_similar_pair_closer(
    no_network: list[str],
) -> None:
    embedder = WordLlamaEmbedder()

    vectors = embedder.embed(
        [
            "The cat sat on the mat.",
            "A kitten was sitting on the rug.",
            "Quarterly revenue rose by four percent.",
        ]
    )

    assert no_network == []
    assert vectors.dtype == np.float32 and vectors.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])


def test_loading_wordllama_leaves_the_root_logger_alone(no_network: list[str]) -> None:
    root = logging.getLogger()
    before = (list(root.handlers), root.level)

    WordLlamaEmbedder().embed(["hello"])

    assert (list(root.handlers), root.level) == before


def test_a_memory_opened_with_the_defaults_embeds_with_wordllama_offline(
    tmp_path: Path, clock: Callable[[], datetime], no_network: list[str]
) -> None:
    memory = Memory.open(tmp_path / "mem", clock=clock)
    memory.assert_facts(
        [
            {"subject": "Ann", "relation": "plays", "value": "violin", "fact": "Ann plays violin"},
            {"subject": "Bob", "relation": "owns", "value": "a truck", "fact": "Bob owns a truck"},
        ]
    )

    [nearest] = memory.similar("Who is a musician playing the violin?", k=1)
    name = memory.similarity.embedder.name if memory.similarity else None
    memory.close()

    assert no_network == []
    assert name == "wordllama-l2_supercat-256"
    assert nearest.score > 0.3


def test_the_guard_catches_wordllama_reaching_for_the_hub_when_not_pointed_at_the_wheel(
    tmp_path: Path, no_network: list[str]
) -> None:
    embedders_module._model()  # imports wordllama with the root logger restored
    from wordllama import WordLlama

    with pytest.raises(FileNotFoundError, match="Failed to download tokenizer"):
        WordLlama.load("l2_supercat", cache_dir=tmp_path, dim=256)

    assert no_network != []
