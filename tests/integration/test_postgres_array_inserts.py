"""On PostgreSQL a batch of `bulk.ARRAY_ROWS` rows or more is inserted as one statement over
arrays of its columns (an upsert too, for rows of distinct keys): the read models it writes
are the rows an executemany writes."""

from __future__ import annotations

import uuid
from typing import Any
from unittest.mock import patch

from bench_scripts import run
from pg_schemas import postgres_schema

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.settings import MemorySettings, ProjectionSettings, Settings
from apexmem.events.envelope import NewEvent
from apexmem.events.policy import FactsRetrieved
from apexmem.readmodels import bulk, fulltext_pg
from apexmem.readmodels.store import dump

_DEFERRED = Settings(memory=MemorySettings(projection=ProjectionSettings(inline=False)))


def _rebuilt(memory: Memory, rows: int) -> dict[str, list[tuple[Any, ...]]]:
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
            memory.project()
            with memory.store.read() as connection:
                ids = list(dict.fromkeys(row[0] for row in dump(connection)["facts"]))[:60]
            # usage of 40 facts, 20 of them in two recalls: upserts adding to a count
            recalls = [ids[:40], ids[20:60], ids[:20]]
            memory.log.append(
                [
                    NewEvent(stream_id=uuid.uuid4(), version=1, data=FactsRetrieved(fact_ids=f))
                    for f in recalls
                ]
            )
            one_by_one = _rebuilt(memory, 10**9)
            as_arrays = _rebuilt(memory, 1)

    assert as_arrays == one_by_one
    assert len(as_arrays["facts"]) >= 500 and len(as_arrays["messages_fts"]) > 0
    assert sorted(float(row[1]) for row in as_arrays["retrievals"]) == [1.0] * 20 + [2.0] * 40
