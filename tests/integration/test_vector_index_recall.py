"""The HNSW index's recall@10 against an exact scan, on WordLlama vectors of varied sentences:
the floor its build and search parameters are chosen to keep (bench/vectors.py --faiss N
checks the same at scale)."""

from __future__ import annotations

import itertools
import random
import uuid
from pathlib import Path
from typing import Final

from sqlalchemy import insert

from apexmem.domain.embedding import Embedder
from apexmem.readmodels.store import ReadModelStore, set_position
from apexmem.readmodels.vector_index import VectorIndex
from apexmem.readmodels.vectors import (
    VECTORS,
    brute_force,
    text_key,
    vector_cache,
    vector_items,
    vector_metadata,
)

PEOPLE: Final = ("Ann", "Bob", "Cid", "Dee", "Eve", "Fay", "Gus", "Hal", "Ida", "Jon")
VERBS: Final = ("plays", "cooks", "studies", "collects", "paints", "writes about", "sells")
THINGS: Final = (
    "violin", "tomatoes", "rust compilers", "mountain trails", "jazz records", "stock options",
    "italian pasta", "chess openings", "football tactics", "garden soil", "old maps",
    "sailing boats", "oil paintings", "python wheels", "tax law", "bird songs",
)  # fmt: skip
PLACES: Final = ("in Paris", "at home", "on Sundays", "with friends", "at work", "in Berlin")
FLOOR: Final = 0.97


def _fill(store: ReadModelStore, embedder: Embedder, texts: list[str]) -> None:
    """The texts as fact items of the vectors read model, as the projection leaves them."""
    vector_metadata.create_all(store.engine)
    vectors = embedder.embed(texts)
    rng = random.Random(3)
    with store.write() as connection:
        connection.execute(
            insert(vector_cache),
            [
                {"model": embedder.name, "text_key": text_key(t), "vector": v.tobytes()}
                for t, v in zip(texts, vectors, strict=True)
            ],
        )
        connection.execute(
            insert(vector_items),
            [
                {
                    "vid": vid,
                    "kind": "fact",
                    "item_id": uuid.UUID(int=rng.getrandbits(128)),
                    "model": embedder.name,
                    "text_key": text_key(t),
                }
                for vid, t in enumerate(texts, start=1)
            ],
        )
        set_position(connection, VECTORS, len(texts))


def test_the_hnsw_index_finds_at_least_97_percent_of_the_exact_top_10(
    tmp_path: Path, wordllama: Embedder
) -> None:
    sentences = [
        f"{p} {v} {t} {w}" for p, v, t, w in itertools.product(PEOPLE, VERBS, THINGS, PLACES)
    ]
    store = ReadModelStore(tmp_path / "readmodels.db")
    _fill(store, wordllama, sentences)
    index = VectorIndex(
        store, model=wordllama.name, dimension=wordllama.dimension, hnsw_threshold=1_000
    )
    rng = random.Random(5)
    questions = [f"who {rng.choice(VERBS)} {rng.choice(THINGS)}?" for _ in range(100)]
    questions += [f"what does {rng.choice(PEOPLE)} do {rng.choice(PLACES)}?" for _ in range(100)]

    hits = 0
    with store.read() as connection:
        for query in wordllama.embed(questions):
            found = index.nearest("fact", query, 10, connection=connection)
            exact = brute_force(connection, "fact", query, 10, model=wordllama.name)
            tenth = exact[-1][1]
            hits += min(10, sum(1 for _, score in found if score >= tenth - 1e-5))
    hnsw = index.is_hnsw("fact")
    store.close()

    assert hnsw
    assert len(sentences) == 6_720
    assert hits / (10 * len(questions)) >= FLOOR
