"""On PostgreSQL a batch of `bulk.ARRAY_ROWS` rows or more is inserted as one statement over
arrays of its columns: the read models it writes are the rows an executemany writes."""

from __future__ import annotations

from unittest.mock import patch

from bench_scripts import run
from pg_schemas import postgres_schema

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.settings import MemorySettings, ProjectionSettings, Settings
from apexmem.readmodels import bulk, fulltext_pg
from apexmem.readmodels.store import dump

_DEFERRED = Settings(memory=MemorySettings(projection=ProjectionSettings(inline=False)))


def _rebuilt(memory: Memory, rows: int) -> dict[str, list[tuple[object, ...]]]:
    """The read models rebuilt with arrays from `rows` rows on."""
    with patch.object(bulk, "ARRAY_ROWS", rows), patch.object(fulltext_pg, "ARRAY_ROWS", rows):
        memory.rebuild()
    with memory.store.read() as connection:
        return dump(connection)


def test_inserts_over_arrays_write_the_rows_an_executemany_writes() -> None:
    with postgres_schema("arrays") as url:
        made = run(  # the suite's workload (entities, facts, messages), 600 facts
            "-c",
            f"import sys; sys.path.insert(0, 'bench'); from recall import write_log; "
            f"write_log({url!r}, 600, 7, 'hashing')",
        )
        assert made.returncode == 0, made.stderr[-3000:]
        with Memory.open(url, settings=_DEFERRED, embedder=HashingEmbedder(256)) as memory:
            one_by_one = _rebuilt(memory, 10**9)
            as_arrays = _rebuilt(memory, 1)

    assert as_arrays == one_by_one
    assert len(as_arrays["facts"]) >= 500 and len(as_arrays["messages_fts"]) > 0
