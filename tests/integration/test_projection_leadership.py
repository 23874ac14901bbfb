"""Two `apexmem project --follow` processes on one memory: one leads, the other waits, and
takes over when the leader is killed (kill -9), on SQLite and on PostgreSQL.

The lease is held by something released when its holder dies: a file lock in the memory
directory, a session advisory lock on the PostgreSQL server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Final

import pytest
from pg_schemas import postgres_schema

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.settings import Settings, parse_settings
from apexmem.location import locate
from apexmem.readmodels import tracked_position

APEXMEM: Final = [sys.executable, "-c", "from apexmem.cli import main; main()"]
SETTINGS: Final = (
    "[memory.projection]\ninline = false\nbatch_size = 20\n[memory.vectors]\nenabled = false\n"
)
WAIT_S: Final = 60.0


def _settings() -> Settings:
    settings, _ = parse_settings(SETTINGS, source="test")
    return settings


@pytest.fixture(params=["sqlite", "postgresql"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where the memory is: a directory, or a fresh PostgreSQL schema (dropped after)."""
    if request.param == "sqlite":
        directory = tmp_path / "mem"
        directory.mkdir()
        (directory / "apexmem.toml").write_text(SETTINGS, encoding="utf-8")
        yield str(directory)
        return
    with postgres_schema("lead") as url:
        cache = locate(url, cache=tmp_path / "cache").directory
        cache.mkdir(parents=True)
        (cache / "apexmem.toml").write_text(SETTINGS, encoding="utf-8")
        yield url


def _follower(place: str, tmp_path: Path, name: str) -> tuple[subprocess.Popen[bytes], Path]:
    err = tmp_path / f"{name}.err"
    env = {**os.environ, "APEXMEM_LOG_LEVEL": "INFO", "APEXMEM_CACHE": str(tmp_path / "cache")}
    with err.open("wb") as stream:
        process = subprocess.Popen(
            [*APEXMEM, "--db", place, "project", "--follow"],
            stdout=subprocess.DEVNULL,
            stderr=stream,
            env=env,
        )
    return process, err


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


def _said(path: Path, event: str) -> bool:
    return event in path.read_text(encoding="utf-8", errors="replace")


def _write(memory: Memory, first: int, count: int) -> None:
    memory.assert_facts(
        [
            {
                "subject": f"Person {n}",
                "subject_type": "person",
                "relation": "works_at",
                "object": f"Org {n % 7}",
                "object_type": "organization",
            }
            for n in range(first, first + count)
        ]
    )


def _projected(memory: Memory) -> int:
    with memory.store.read() as connection:
        return tracked_position(connection, "graph")


@pytest.mark.slow  # two CLI followers, each loading apexmem, and a takeover after kill -9
def test_one_follower_leads_and_another_takes_over_when_it_is_killed(
    place: str, tmp_path: Path
) -> None:
    memory = Memory.open(
        locate(place, cache=tmp_path / "cache"), settings=_settings(), embedder=HashingEmbedder()
    )
    streams: list[IO[bytes]] = []
    first, first_err = _follower(place, tmp_path, "first")
    try:
        _until(lambda: _said(first_err, "projection.following"), "the first follower to lead")
        second, second_err = _follower(place, tmp_path, "second")
        try:
            _until(lambda: _said(second_err, "projection.waiting"), "the second one to wait")
            _write(memory, 0, 50)
            last = memory.log.last_position()
            _until(lambda: _projected(memory) == last, "the leader to project the writes")
            assert not _said(second_err, "projection.following")

            first.send_signal(signal.SIGKILL)
            first.wait(timeout=WAIT_S)
            _until(lambda: _said(second_err, "projection.following"), "the takeover")
            _write(memory, 50, 50)
            last = memory.log.last_position()
            _until(lambda: _projected(memory) == last, "the new leader to project")

            second.send_signal(signal.SIGTERM)
            assert second.wait(timeout=WAIT_S) == 0
        finally:
            second.kill()
            second.wait()
    finally:
        first.kill()
        first.wait()
        for stream in streams:
            stream.close()
    assert len(memory.facts_about("Org 3")) == len([n for n in range(100) if n % 7 == 3])
    assert memory.verify().ok
    memory.close()
