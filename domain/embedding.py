"""Embedders: the port that turns texts into unit vectors, and a deterministic one for tests."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from blake3 import blake3

__all__ = ["Embedder", "HashingEmbedder", "Vectors", "entity_text", "normalized"]

Vectors = npt.NDArray[np.float32]
"""A float32 array of shape (n, dimension), one L2-normalized row per text."""

_WORD: Final = re.compile(r"\w+")


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 vectors of a fixed dimension.

    `name` identifies the model: vectors are cached under it, so two embedders with the
    same name must give the same vectors.
    """

    @property
    def name(self) -> str:
        """The model's name, part of every cached vector's key."""
        ...

    @property
    def dimension(self) -> int:
        """The length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One normalized row per text, in order; shape (len(texts), dimension)."""
        ...


def entity_text(name: str, summary: str | None) -> str:
    """The text an entity is embedded by: its name, then `: ` and its summary if it has one.

    Stored vectors are keyed by a hash of this text: a change re-embeds every entity.
    """
    return name if not summary else f"{name}: {summary}"


def normalized(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (all-zero rows stay zero), as contiguous float32."""
    out = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out


class HashingEmbedder:
    """A deterministic bag-of-words embedder: each lowercased word and word pair adds a
    pseudo-random direction seeded by its blake3 hash. Texts sharing words are close.

    Pure and fast; for tests and for memories that must not load a model.
    """

    def __init__(self, dimension: int = 256) -> None:
        self._dimension = dimension
        self._cache: dict[str, Vectors] = {}

    @property
    def name(self) -> str:
        """`hashing-<dimension>`."""
        return f"hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        """The length of every vector."""
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One normalized row per text; an empty text gives a zero row."""
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            for token in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
                out[row] += self._direction(token)
        return normalized(out)

    def _direction(self, token: str) -> Vectors:
        found = self._cache.get(token)
        if found is None:
            seed = int.from_bytes(blake3(token.encode()).digest(8), "little")
            found = np.random.default_rng(seed).standard_normal(self._dimension).astype(np.float32)
            if len(self._cache) < 100_000:
                self._cache[token] = found
        return found
