"""Shared fixtures and the hypothesis profiles (`ci` by default, `dev` via HYPOTHESIS_PROFILE)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

import psycopg
import pytest
from hypothesis import HealthCheck, settings
from storage_backends import vacuum_catalogs

from apexmem import Memory
from apexmem.domain.embedding import Embedder, HashingEmbedder
from apexmem.embedders import WordLlamaEmbedder

settings.register_profile(
    "ci",
    max_examples=50,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev",
    max_examples=1000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

CLOCK_START: Final = datetime(2024, 1, 1, tzinfo=UTC)
"""Where the fixed clock starts: later than every valid time the tests spell out."""


def _ticking_clock(start: datetime, step: timedelta) -> Callable[[], datetime]:
    ticks = 0

    def now() -> datetime:
        nonlocal ticks
        ticks += 1
        return start + step * ticks

    return now


@pytest.fixture(scope="session", autouse=True)
def local_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The local files of the tests' PostgreSQL memories (a FAISS index per schema) under
    the run's temporary directory, not ~/.cache/apexmem: their schemas are dropped after
    each test, their directories were not (2.2 GB there after a few sessions). A test that
    sets APEXMEM_CACHE itself still chooses; subprocesses inherit it."""
    chosen = os.environ.get("APEXMEM_CACHE")
    cache = tmp_path_factory.mktemp("apexmem-cache")
    os.environ["APEXMEM_CACHE"] = str(cache)
    yield cache
    if chosen is None:
        os.environ.pop("APEXMEM_CACHE", None)
    else:
        os.environ["APEXMEM_CACHE"] = chosen


@pytest.fixture(scope="session", autouse=True)
def tidy_server() -> Iterator[None]:
    """After the run, the test server's catalogs vacuumed where autovacuum is off
    (`storage_backends.vacuum_catalogs`); a server that does not answer is left alone (the
    PostgreSQL tests have failed already)."""
    yield
    with contextlib.suppress(psycopg.OperationalError):
        vacuum_catalogs()


@pytest.fixture
def clock() -> Callable[[], datetime]:
    """A deterministic clock: starts at 2024-01-01 UTC and moves one millisecond per reading."""
    return _ticking_clock(CLOCK_START, timedelta(milliseconds=1))


@pytest.fixture
def memory(tmp_path: Path, clock: Callable[[], datetime]) -> Iterator[Memory]:
    """A memory in a fresh directory with the deterministic clock and the hashing embedder."""
    mem = Memory.open(tmp_path / "mem", clock=clock, embedder=HashingEmbedder())
    yield mem
    mem.close()


@pytest.fixture(scope="session")
def wordllama() -> Embedder:
    """The real WordLlama embedder, loaded once for the whole run (from its wheel, offline)."""
    return WordLlamaEmbedder()
