"""The read-model store contract: every implementation of `readmodels.ports.ReadModels`
passes these, written once (the `store_backend` fixture names each one, from
`storage_backends.STORES`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Final
from uuid import UUID

import pytest
from sqlalchemy import func, insert, select, text
from storage_backends import STORES, discard_store, open_store

from apexmem.readmodels import tracked_position
from apexmem.readmodels.prepared import driver_rows
from apexmem.readmodels.store import set_position, time_limited
from apexmem.readmodels.tables import GRAPH, episodes, tracking


@pytest.fixture(params=STORES)
def store_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The name of each read-model store backend (what a test made outside tmp_path is
    removed after it)."""
    yield str(request.param)
    discard_store(str(request.param), tmp_path / "readmodels.db")


def _episodes(store_backend: str, path: Path) -> int:
    """How many episodes the store at `path` holds, opened afresh."""
    store = open_store(store_backend, path)
    try:
        with store.read() as connection:
            return int(connection.execute(select(func.count()).select_from(episodes)).scalar_one())
    finally:
        store.close()


def _episode(n: int) -> dict[str, object]:
    """An episode row numbered `n`."""
    return {
        "episode_id": UUID(int=n),
        "conversation": f"c{n}",
        "started_at": datetime(2024, 1, 1, tzinfo=UTC),
        "position": n,
    }


def test_a_write_commits_when_its_block_ends(store_backend: str, tmp_path: Path) -> None:
    store = open_store(store_backend, tmp_path / "readmodels.db")

    with store.write() as connection:
        connection.execute(insert(episodes), [_episode(1), _episode(2)])
    with store.read() as connection:
        seen = connection.execute(select(episodes.c.conversation)).scalars().all()
    store.close()

    assert sorted(seen) == ["c1", "c2"]
    assert _episodes(store_backend, tmp_path / "readmodels.db") == 2


def test_a_failed_write_rolls_back_everything_it_wrote(store_backend: str, tmp_path: Path) -> None:
    store = open_store(store_backend, tmp_path / "readmodels.db")
    with store.write() as connection:
        connection.execute(insert(episodes), [_episode(1)])

    def failing() -> None:
        with store.write() as connection:
            connection.execute(insert(episodes), [_episode(2)])
            set_position(connection, GRAPH, 9)
            raise RuntimeError("a projection failed")

    with pytest.raises(RuntimeError, match="a projection failed"):
        failing()
    with store.read() as connection:
        count = connection.execute(select(func.count()).select_from(episodes)).scalar_one()
        position = tracked_position(connection, GRAPH)
    store.close()

    assert (count, position) == (1, 0)


def test_tracking_positions_persist_across_reopening(store_backend: str, tmp_path: Path) -> None:
    store = open_store(store_backend, tmp_path / "readmodels.db")
    with store.write() as connection:
        set_position(connection, GRAPH, 5)
        set_position(connection, "other", 3)
    with store.write() as connection:
        set_position(connection, GRAPH, 8)
    store.close()

    again = open_store(store_backend, tmp_path / "readmodels.db")
    with again.read() as connection:
        positions = (tracked_position(connection, GRAPH), tracked_position(connection, "other"))
        unknown = tracked_position(connection, "never")
    again.close()

    assert positions == (8, 3)
    assert unknown == 0


def test_reset_empties_every_table(store_backend: str, tmp_path: Path) -> None:
    store = open_store(store_backend, tmp_path / "readmodels.db")
    with store.write() as connection:
        connection.execute(insert(episodes), [_episode(1)])
        set_position(connection, GRAPH, 4)

    with store.write() as connection:
        store.reset(connection)
    with store.read() as connection:
        count = connection.execute(select(func.count()).select_from(episodes)).scalar_one()
        tracked = connection.execute(select(func.count()).select_from(tracking)).scalar_one()
    store.close()

    assert (count, tracked) == (0, 0)
    assert _episodes(store_backend, tmp_path / "readmodels.db") == 0


def test_a_store_keeps_its_path_and_indexes_can_be_dropped_and_made_again(
    store_backend: str, tmp_path: Path
) -> None:
    store = open_store(store_backend, tmp_path / "readmodels.db")

    with store.write() as connection:
        store.drop_indexes(connection)
        store.create_indexes(connection)
        connection.execute(insert(episodes), [_episode(1)])
    with store.read() as connection:
        count = connection.execute(select(func.count()).select_from(episodes)).scalar_one()
    store.close()

    assert store.path.parent == tmp_path  # the vector index file is written beside it
    assert count == 1


def test_a_read_sees_the_state_it_began_with_while_a_write_commits(
    store_backend: str, tmp_path: Path
) -> None:
    store = open_store(store_backend, tmp_path / "readmodels.db")
    with store.write() as connection:
        connection.execute(insert(episodes), [_episode(1)])

    with store.read() as reading:
        before = reading.execute(select(func.count()).select_from(episodes)).scalar_one()
        with store.write() as connection:
            connection.execute(insert(episodes), [_episode(2)])
        during = reading.execute(select(func.count()).select_from(episodes)).scalar_one()
    with store.read() as reading:
        after = reading.execute(select(func.count()).select_from(episodes)).scalar_one()
    store.close()

    assert (before, during, after) == (1, 1, 2)


_ENDLESS: Final = text(
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000000)"
    " SELECT count(*) FROM n"
)


@pytest.mark.parametrize("through", ["sqlalchemy", "driver"])
def test_a_time_limit_stops_a_statement_and_the_read_goes_on(
    store_backend: str, tmp_path: Path, through: str
) -> None:
    store = open_store(store_backend, tmp_path / "readmodels.db")
    with store.write() as connection:
        connection.execute(insert(episodes), [_episode(1)])
    reached: list[str] = []

    with store.read() as connection:
        with time_limited(connection, lambda: True):
            if through == "driver":  # as the recall's prepared statements run
                driver_rows(connection, str(_ENDLESS), ())
            else:
                connection.execute(_ENDLESS).scalar_one()
            reached.append("the end of the block")
        count = connection.execute(select(func.count()).select_from(episodes)).scalar_one()
    store.close()

    assert reached == []
    assert count == 1


def test_a_time_limit_stops_only_its_own_read(store_backend: str, tmp_path: Path) -> None:
    """Reads in two threads, each in a time limit (one watcher serves them all on
    PostgreSQL): the one out of time is stopped, the other runs to its end meanwhile."""
    store = open_store(store_backend, tmp_path / "readmodels.db")
    with store.write() as connection:
        connection.execute(insert(episodes), [_episode(1)])
    started = threading.Barrier(2)
    finished: dict[str, int] = {}

    def read(name: str, out_of_time: Callable[[], bool], statement: str) -> None:
        with store.read() as connection:
            started.wait(timeout=30)
            with time_limited(connection, out_of_time):
                finished[name] = int(driver_rows(connection, statement, ())[0][0])
            finished[f"{name} after"] = int(
                connection.execute(select(func.count()).select_from(episodes)).scalar_one()
            )

    deadline = time.monotonic() + 0.3
    stopped = threading.Thread(
        target=read, args=("stopped", lambda: time.monotonic() > deadline, str(_ENDLESS))
    )
    counted = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000)"
    free = threading.Thread(
        target=read, args=("free", lambda: False, f"{counted} SELECT count(*) FROM n")
    )
    for thread in (stopped, free):
        thread.start()
    for thread in (stopped, free):
        thread.join(timeout=60)
    store.close()

    assert finished == {"stopped after": 1, "free": 300000, "free after": 1}
