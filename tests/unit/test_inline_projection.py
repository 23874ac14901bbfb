"""Inline projection: after a write, the graph and the vectors catch up in one transaction;
a projection far behind goes through its runner in batches, and one that fails does not hold
back the other."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, event
from storage_backends import POSTGRES_URL, drop_schema, fresh_schema

from apexmem import Memory, parse_settings
from apexmem.domain.embedding import HashingEmbedder, Vectors
from apexmem.readmodels import prepared
from apexmem.readmodels.store import dump, tracked_position


class BrokenEmbedder(HashingEmbedder):
    """The hashing embedder, or an error while `broken` is set (a model that fails to load)."""

    broken = False

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Fail while broken, else embed."""
        if self.broken:
            raise RuntimeError("the embedding model is unavailable")
        return super().embed(texts)


def _fact(i: int) -> dict[str, Any]:
    return {
        "subject": f"Person {i}",
        "relation": "works_at",
        "object": f"Company {i % 3}",
        "fact": f"Person {i} works at Company {i % 3}",
    }


def _positions(memory: Memory) -> tuple[int, int, int]:
    vectors = memory.projections.vectors
    assert vectors is not None
    return (
        memory.log.last_position(),
        memory.projections.graph.position(),
        vectors.position(),
    )


def test_an_inline_write_commits_both_projections_once(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    with Memory.open(tmp_path / "m", clock=clock, embedder=HashingEmbedder()) as memory:
        memory.assert_fact(**_fact(0))
        commits: list[object] = []
        event.listen(memory.store.engine, "commit", commits.append)
        ref = memory.assert_fact(**_fact(1))
        assert len(commits) == 1
        last, graph, vectors = _positions(memory)
        assert (graph, vectors) == (last, last)
        assert ref.fact_id in {hit.item_id for hit in memory.recall("Person 1 works")}


def test_projections_already_there_need_no_transaction(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    # Every read catches up first (inline): when nothing is new it must not take the
    # read models' write lock, nor begin a transaction of its own: the read's own
    # transaction reads the tracked positions first (a rebuild in another process may have
    # reset them).
    with Memory.open(tmp_path / "m", clock=clock, embedder=HashingEmbedder()) as memory:
        memory.assert_fact(**_fact(0))
        begun: list[bool] = []
        event.listen(
            memory.store.engine,
            "begin",
            lambda c: begun.append(bool(c.get_execution_options().get("immediate"))),
        )
        memory.projections.ready()
        assert begun == []
        with memory.store.read() as connection:
            assert tracked_position(connection, "graph") == memory.log.last_position()
        assert begun == [False]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_recall_reads_the_tracked_positions_once_when_nothing_is_new(
    tmp_path: Path, clock: Callable[[], datetime], monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    # On PostgreSQL every statement is a round trip: the readiness check (the graph's and
    # the vectors' positions) and the vector index's sync share one statement, in the
    # recall's own transaction.
    schema = fresh_schema()
    location = tmp_path / "m" if backend == "sqlite" else f"{POSTGRES_URL}?schema={schema}"
    settings, _ = parse_settings("[memory.recall]\nrecord_usage = false\n")
    try:
        with Memory.open(
            location, settings=settings, clock=clock, embedder=HashingEmbedder()
        ) as memory:
            memory.assert_facts([_fact(i) for i in range(5)])
            assert memory.recall("Person 1 works")  # caught up, the index built
            statements: list[str] = []
            driver_rows = prepared.driver_rows

            def counted(connection: Connection, statement: str, args: Any, **kw: Any) -> Any:
                statements.append(statement)
                return driver_rows(connection, statement, args, **kw)

            monkeypatch.setattr(prepared, "driver_rows", counted)
            begun: list[object] = []
            event.listen(memory.store.engine, "begin", begun.append)
            assert memory.recall("Person 2 works")
            assert len([s for s in statements if "tracking" in s]) == 1
            assert len(begun) == 1
    finally:
        if backend == "postgresql":
            drop_schema(schema)


def test_a_failing_projection_does_not_hold_back_the_other(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    embedder = BrokenEmbedder()
    with Memory.open(tmp_path / "m", clock=clock, embedder=embedder) as memory:
        memory.assert_fact(**_fact(0))
        before = _positions(memory)
        embedder.broken = True
        with pytest.raises(RuntimeError, match="embedding model is unavailable"):
            memory.assert_fact(**_fact(1))
        last, graph, vectors = _positions(memory)
        assert last > before[0]  # the write itself is in the log
        assert graph == last  # the graph committed without the vectors
        assert vectors == before[2]
        embedder.broken = False
        commits: list[object] = []
        event.listen(memory.store.engine, "commit", commits.append)
        memory.assert_fact(**_fact(2))
        assert len(commits) == 1  # both, from their own positions, in one transaction
        last, graph, vectors = _positions(memory)
        assert (graph, vectors) == (last, last)
        assert memory.similarity is not None
        found = memory.similarity.similar_exact("Person 1 works at Company 1", kind="fact", k=1)
        assert found and found[0].score > 0.99


def test_projections_far_behind_catch_up_in_batches_and_match_a_rebuild(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    off, _ = parse_settings("[memory.projection]\ninline = false\nbatch_size = 7\n")
    on, _ = parse_settings("[memory.projection]\nbatch_size = 7\n")
    with Memory.open(tmp_path / "m", clock=clock, embedder=HashingEmbedder(), settings=off) as m:
        m.assert_facts([_fact(i) for i in range(20)])
        assert m.projections.position() == 0
    with Memory.open(tmp_path / "m", clock=clock, embedder=HashingEmbedder(), settings=on) as m:
        m.assert_fact(**_fact(20))
        last, graph, vectors = _positions(m)
        assert (graph, vectors) == (last, last)
        with m.store.read() as connection:
            incremental = dump(connection)
        m.rebuild()
        with m.store.read() as connection:
            assert dump(connection) == incremental


@pytest.mark.parametrize("inline", [True, False])
def test_read_models_another_process_reset_are_projected_again(
    tmp_path: Path, clock: Callable[[], datetime], inline: bool
) -> None:
    # A rebuild in another process drops the read models and resets the tracked positions;
    # killed before it finished, it leaves them behind. A reader (inline) and a follower
    # (`project`) that had seen the head must look again rather than trust what they saw.
    settings, _ = parse_settings(f"[memory.projection]\ninline = {str(inline).lower()}\n")
    directory = tmp_path / "m"
    with Memory.open(directory, settings=settings, clock=clock, embedder=HashingEmbedder()) as m:
        m.assert_facts([_fact(i) for i in range(30)])
        m.project()
        before = sorted(f.fact for f in m.current_facts())
        with (
            Memory.open(directory, settings=settings, embedder=HashingEmbedder()) as other,
            other.store.write() as connection,  # the rebuild's first step, then killed
        ):
            other.store.reset(connection)
        if not inline:
            m.project()
        assert sorted(f.fact for f in m.current_facts()) == before
        assert m.stats().projection_lag == 0
