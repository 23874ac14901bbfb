"""The projection set: the graph, the vectors and the FAISS index kept from one log, wired once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from apexmem import Memory, parse_settings
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events.errors import ApexmemError
from apexmem.readmodels.store import dump
from apexmem.readmodels.tables import GRAPH
from apexmem.replay.projections import unprojected

_OFF = "[memory.projection]\ninline = false\nbatch_size = 7\n"


def _fact(i: int) -> dict[str, Any]:
    return {
        "subject": f"Person {i}",
        "relation": "works_at",
        "object": f"Company {i % 3}",
        "fact": f"Person {i} works at Company {i % 3}",
    }


def _open(directory: Path, clock: Callable[[], datetime], toml: str = _OFF, **kw: Any) -> Memory:
    settings, _ = parse_settings(toml)
    kw.setdefault("embedder", HashingEmbedder())
    return Memory.open(directory, settings=settings, clock=clock, **kw)


def test_follow_keeps_graph_and_vectors_at_the_head_and_tells_each_catch_up(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    with _open(tmp_path / "m", clock) as memory:
        memory.assert_facts([_fact(i) for i in range(20)])
        last = memory.log.last_position()
        told: list[tuple[str, int]] = []

        position = memory.projections.follow(
            should_stop=lambda: ("vectors", last) in told,
            caught_up=lambda name, reached: told.append((name, reached)),
        )

        assert position == last
        assert told == [("graph", last), ("vectors", last)]
        vectors = memory.projections.vectors
        assert vectors is not None and vectors.position() == last
        assert memory.projections.lag() == 0


def test_a_rebuild_drops_both_read_models_and_projects_the_same_again(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    with _open(tmp_path / "m", clock) as memory:
        memory.assert_facts([_fact(i) for i in range(20)])
        first = memory.projections.catch_up()
        with memory.store.read() as connection:
            before = dump(connection)

        memory.projections.drop()
        dropped = memory.projections.position()
        again = memory.projections.rebuild()

        with memory.store.read() as connection:
            assert dump(connection) == before
        assert dropped == 0
        assert (again.events, again.position) == (first.events, first.position)
        assert memory.projections.index is not None
        assert memory.projections.index.path.exists()  # built beside the vectors, saved


def test_unprojected_is_the_log_past_the_read_models_position(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    with _open(tmp_path / "m", clock) as memory:
        memory.assert_facts([_fact(i) for i in range(3)])
        memory.projections.graph.catch_up()
        memory.assert_fact(**_fact(3))

        with memory.store.read() as connection:
            later = list(unprojected(memory.log, connection, GRAPH, tags=("fact-asserted.v1",)))

        assert [e.data.fact for e in later] == ["Person 3 works at Company 0"]
        assert all(e.position > memory.projections.position() for e in later)


def test_without_vectors_the_set_keeps_the_graph_alone(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    toml = "[memory.vectors]\nenabled = false\n"
    with _open(tmp_path / "m", clock, toml, embedder=None) as memory:
        memory.assert_fact(**_fact(0))

        assert memory.projections.vectors is None and memory.similarity is None
        assert memory.projections.lag() == 0  # inline: the write projected the graph
        with pytest.raises(ApexmemError, match="vectors are disabled"):
            memory.projections.catch_up_vectors()


def test_vectors_of_another_model_are_dropped_on_opening_and_embedded_again(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    with _open(tmp_path / "m", clock) as memory:
        memory.assert_fact(**_fact(0))
        memory.projections.catch_up()

    with _open(tmp_path / "m", clock, embedder=HashingEmbedder(dimension=64)) as memory:
        replaced = memory.projections.replaced_models
        vectors = memory.projections.vectors
        assert vectors is not None
        dropped = vectors.position()
        memory.projections.catch_up()

        assert replaced == ["hashing-256"]
        assert dropped == 0
        assert vectors.position() == memory.log.last_position()
