"""The FAISS index on random histories of new and changed texts, looked at at random moments,
saved and reopened: every kind's index answers for exactly the items the SQL vectors hold,
each by its current text, with the exact cosine; exact and HNSW alike."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from apexmem import Memory, Settings, parse_settings
from apexmem.domain.embedding import HashingEmbedder
from apexmem.projections.vectors import KINDS
from apexmem.readmodels import vector_index
from apexmem.readmodels.vectors import brute_force, vector_items

NAMES: Final = ("Ann", "Bob", "Cid", "Dee", "Eve", "Fay")
WORDS: Final = ("violin", "tomato", "cargo", "summit", "jazz", "market", "pasta", "chess")

steps = st.lists(
    st.one_of(
        st.tuples(st.just("observe"), st.sampled_from(NAMES), st.sampled_from(WORDS)),
        st.tuples(st.just("fact"), st.sampled_from(NAMES), st.sampled_from(WORDS)),
        st.tuples(st.just("message"), st.sampled_from(NAMES), st.sampled_from(WORDS)),
        st.tuples(st.just("look"), st.just(""), st.sampled_from(WORDS)),
        st.tuples(st.just("reopen"), st.just(""), st.just("")),
    ),
    min_size=1,
    max_size=14,
)


def _clock() -> Any:
    now = [datetime(2024, 1, 1, tzinfo=UTC)]

    def tick() -> datetime:
        now[0] += timedelta(milliseconds=1)
        return now[0]

    return tick


def _settings(threshold: int) -> Settings:
    settings, _ = parse_settings(f"[memory.vectors]\nhnsw_threshold = {threshold}\n")
    return settings


def _apply(memory: Memory, step: tuple[str, str, str], n: int) -> None:
    action, name, word = step
    if action == "observe":
        memory.observe_entity(name=name, summary=f"a {word} person")
    elif action == "fact":
        memory.assert_fact(subject=name, relation="likes", value=f"{word} {n}")
    elif action == "message":
        memory.record_message(episode="chat", speaker=name, text=f"{name} talks about {word}")
    elif action == "look":
        memory.similar(word, kind="entity", k=3)


def _check(memory: Memory) -> None:
    similarity = memory.similarity
    assert similarity is not None
    embedder, index = similarity.embedder, similarity.index
    query = embedder.embed(["violin tomato jazz person"])[0]
    for kind in KINDS:
        found = index.nearest(kind, query, 1_000)
        with memory.store.read() as connection:
            exact = brute_force(connection, kind, query, 1_000, model=embedder.name)
            count = connection.execute(
                select(func.count()).where(vector_items.c.kind == kind)
            ).scalar()
        assert index.size(kind) == count == len(found)
        assert {i for i, _ in found} == {i for i, _ in exact}
        assert np.allclose(sorted(s for _, s in found), sorted(s for _, s in exact), atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(steps, st.sampled_from([2, 3, 50_000]), st.sampled_from([2, 5, 16_384]))
def test_the_index_answers_for_exactly_the_items_sql_holds(
    history: list[tuple[str, str, str]], threshold: int, chunk: int
) -> None:
    previous = vector_index._CHUNK
    vector_index._CHUNK = chunk  # type: ignore[misc]  # small chunks: many adds per build
    try:
        with tempfile.TemporaryDirectory(prefix="apexmem-vectors-") as root:
            directory = Path(root)
            clock, embedder = _clock(), HashingEmbedder()
            memory = Memory.open(
                directory, clock=clock, embedder=embedder, settings=_settings(threshold)
            )
            try:
                for n, step in enumerate(history):
                    if step[0] == "reopen":
                        memory.close()
                        memory = Memory.open(
                            directory, clock=clock, embedder=embedder, settings=_settings(threshold)
                        )
                    else:
                        _apply(memory, step, n)
                _check(memory)
                memory.rebuild()
                _check(memory)
            finally:
                memory.close()
    finally:
        vector_index._CHUNK = previous  # type: ignore[misc]
