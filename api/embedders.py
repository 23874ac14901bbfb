"""WordLlama, the default embedder, loaded from the files inside the installed wheel only.

wordllama 0.4 ships its 256-dimension weights in `wordllama/weights/` and the tokenizer in
`wordllama/tokenizers/`. Its loader looks for weights in `<package>/weights` (found) but
for the tokenizer in `<package>/tokenizer` (singular: never found), then in
`<cache_dir>/tokenizers`, then downloads from the Hugging Face hub. Passing the package's
own folder as `cache_dir` makes the second look find the packaged tokenizer, and
`disable_download=True` turns any miss into an error instead of a network call.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Final

from apexmem.domain.embedding import Embedder, HashingEmbedder, Vectors, normalized
from apexmem.domain.settings import VectorSettings
from apexmem.events.errors import ApexmemError

__all__ = ["WORDLLAMA_DIMENSION", "WordLlamaEmbedder", "embedder_for", "wordllama_files"]

WORDLLAMA_CONFIG: Final = "l2_supercat"
WORDLLAMA_DIMENSION: Final = 256
_lock = threading.Lock()
_IN_TURN_UP_TO: Final = 8
"""Texts a call tokenizes one after another rather than through the tokenizer's thread pool."""


def wordllama_files() -> Path:
    """The installed wordllama package's folder (holding `weights/` and `tokenizers/`)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise ApexmemError("the wordllama package is not installed: pip install wordllama")
    return Path(spec.origin).parent


class WordLlamaEmbedder:
    """WordLlama l2_supercat, 256 dimensions: token embeddings average-pooled, normalized.

    The model is loaded on the first `embed` (never at import or construction) and shared
    by every instance in the process: it is read-only.
    """

    name: Final = f"wordllama-{WORDLLAMA_CONFIG}-{WORDLLAMA_DIMENSION}"
    dimension: Final = WORDLLAMA_DIMENSION

    def __init__(self, *, batch_size: int = 256) -> None:
        self._batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One normalized 256-float row per text."""
        model = _model()
        raw = model.embed(list(texts), norm=False, batch_size=self._batch_size)
        return normalized(raw.reshape(len(texts), self.dimension))


@cache
def _model() -> Any:
    with _lock:
        return _load()


def _load() -> Any:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        # wordllama calls logging.basicConfig(level=INFO) on import: undo it, the
        # application owns the root logger.
        from wordllama import WordLlama
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    try:
        model = WordLlama.load(
            WORDLLAMA_CONFIG,
            cache_dir=wordllama_files(),
            dim=WORDLLAMA_DIMENSION,
            disable_download=True,
        )
    except (FileNotFoundError, OSError, ValueError) as e:
        raise ApexmemError(
            f"the WordLlama model files are missing from {wordllama_files()}: {e}; "
            "reinstall wordllama, or set [memory.vectors] embedder = 'hashing'"
        ) from e
    model.tokenize = in_turn(model.tokenizer, model.tokenize)  # this process's model only
    return model


def in_turn(
    tokenizer: Any, batched: Callable[[list[str]], list[Any]]
) -> Callable[[str | list[str]], list[Any]]:
    """WordLlama's `tokenize`, encoding a few texts one after another.

    Its `encode_batch` hands even three texts to the tokenizer's thread pool, and on two
    cores that hand-off took 100-400 µs, several times the encoding itself: a fact written
    with inline projection embeds about three texts (its sentence and two names). The
    encodings are padded to the longest, as `encode_batch` pads them; more texts, or any
    other padding, go to `batched`.
    """
    padding = tokenizer.padding
    longest_only = (
        padding is not None and padding["length"] is None and padding["pad_to_multiple_of"] is None
    )

    def tokenize(texts: str | list[str]) -> list[Any]:
        chosen = [texts] if isinstance(texts, str) else texts
        if not longest_only or len(chosen) > _IN_TURN_UP_TO:
            return batched(chosen)
        encodings = [tokenizer.encode(text, add_special_tokens=False) for text in chosen]
        longest = max((len(e.ids) for e in encodings), default=0)
        for encoding in encodings:
            encoding.pad(
                longest,
                direction=padding["direction"],
                pad_id=padding["pad_id"],
                pad_type_id=padding["pad_type_id"],
                pad_token=padding["pad_token"],
            )
        return encodings

    return tokenize


def embedder_for(settings: VectorSettings) -> Embedder:
    """The embedder `[memory.vectors] embedder` names.

    `minilm` is optional (the `minilm` extra and the model package): without them this
    raises an ApexmemError naming the setting and the install command, at open.
    """
    if settings.embedder == "hashing":
        return HashingEmbedder(settings.hashing_dimension)
    if settings.embedder == "minilm":
        from apexmem.minilm import MiniLMEmbedder

        return MiniLMEmbedder()
    return WordLlamaEmbedder()
