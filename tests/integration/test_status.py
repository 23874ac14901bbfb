"""`Memory.status()`: counts, lags behind the log, the settings that matter and versions,
on SQLite and PostgreSQL, and never the memory's data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import msgspec
import pytest
from storage_backends import POSTGRES_URL, drop_schema, fresh_schema

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.settings import MemorySettings, ProjectionSettings, Settings

_DEFERRED: Final = Settings(memory=MemorySettings(projection=ProjectionSettings(inline=False)))
"""Writes are not projected until `project`: the read models lag behind the log."""
SECRETS: Final = ("Zanzibar Quill", "Okapi Forge", "Zanzibar Quill forges okapis", "q7-ref")


def _tell(memory: Memory) -> None:
    memory.assert_fact(
        subject="Zanzibar Quill",
        subject_type="person",
        relation="works_at",
        object="Okapi Forge",
        object_type="organization",
        fact=SECRETS[2],
        ref=SECRETS[3],
    )
    memory.record_message(episode="talk", speaker="Zanzibar Quill", text="Hello there")


@pytest.fixture
def schema() -> Iterator[str]:
    name = fresh_schema()
    yield name
    drop_schema(name)


def test_status_counts_what_is_held_and_how_far_the_read_models_lag(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "mem", settings=_DEFERRED, embedder=HashingEmbedder()) as memory:
        _tell(memory)
        behind = memory.status()
        memory.project()
        caught_up = memory.status()

    assert behind.lags.head == caught_up.lags.head > 0
    assert behind.lags.graph == behind.lags.head
    assert behind.lags.full_text == behind.lags.graph
    assert (caught_up.lags.graph, caught_up.lags.full_text, caught_up.lags.vectors) == (0, 0, 0)
    assert caught_up.lags.communities is None
    assert caught_up.counts.events == caught_up.lags.head
    assert (caught_up.counts.entities, caught_up.counts.facts_believed) == (2, 1)
    assert (caught_up.counts.episodes, caught_up.counts.messages) == (1, 1)
    assert caught_up.settings.backend == "sqlite"
    assert caught_up.settings.embedder == HashingEmbedder().name
    assert caught_up.versions.database.startswith("SQLite ")


def test_status_holds_no_data_of_the_memory(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "mem", embedder=HashingEmbedder()) as memory:
        _tell(memory)

        encoded = msgspec.json.encode(memory.status()).decode().lower()

    assert not [s for s in SECRETS if s.lower() in encoded]
    assert "token" not in encoded


def test_status_on_postgresql_names_the_server_and_its_lags(schema: str) -> None:
    url = f"{POSTGRES_URL}?schema={schema}"
    with Memory.open(url, settings=_DEFERRED, embedder=HashingEmbedder()) as memory:
        _tell(memory)
        behind = memory.status()
        memory.project()
        caught_up = memory.status()

    assert behind.lags.graph == behind.lags.head > 0
    assert caught_up.lags.graph == 0
    assert caught_up.counts.facts_believed == 1
    assert caught_up.settings.backend == "postgresql"
    assert caught_up.versions.database.startswith("PostgreSQL ")
