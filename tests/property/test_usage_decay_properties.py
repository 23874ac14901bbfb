"""Retrieval counts on random sequences of recalls, clock ticks and decay passes: the read
model holds what folding the log by hand gives, and a rebuild in batches of any size gives
the very same counts and passes as incremental projection."""

from __future__ import annotations

import math
import tempfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import Memory, parse_settings
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events.envelope import NewEvent
from apexmem.events.policy import FactsRetrieved, RetrievalCountsDecayed
from apexmem.readmodels import ReadModelStore, dump
from apexmem.replay.runner import Runner

steps = st.lists(
    st.one_of(
        st.tuples(st.just("retrieve"), st.lists(st.integers(0, 2), min_size=1, max_size=3)),
        st.tuples(st.just("tick"), st.sampled_from([1, 30, 61, 200])),
        st.tuples(st.just("decay"), st.booleans()),
    ),
    min_size=1,
    max_size=25,
)


def _by_hand(memory: Memory) -> dict[UUID, float]:
    """The counts the log implies: +1 per retrieval, `floor(count * factor)` per pass for
    facts last retrieved before its cutoff."""
    counts: dict[UUID, float] = {}
    last: dict[UUID, datetime] = {}
    for event in memory.events(tags=["facts-retrieved.v1", "retrieval-counts-decayed.v1"]):
        data = event.data
        if isinstance(data, FactsRetrieved):
            for fact in data.fact_ids:
                counts[fact] = counts.get(fact, 0.0) + 1
                last[fact] = event.recorded_at
        elif isinstance(data, RetrievalCountsDecayed):
            for fact, count in counts.items():
                if last[fact] < data.cutoff and count > 0:
                    counts[fact] = float(math.floor(count * data.factor))
    return counts


@settings(max_examples=20)
@given(steps, st.sampled_from([0.5, 0.95]), st.integers(min_value=1, max_value=7))
def test_decay_passes_then_a_rebuild_give_the_counts_incremental_projection_gave(
    said: list[tuple[str, Any]], factor: float, batch: int
) -> None:
    now = [datetime(2024, 1, 1, tzinfo=UTC)]
    toml = (
        f"[memory.graph.note_linking]\nlink_weight_decay_lambda = {factor}\n"
        "link_weight_decay_interval_secs = 60\n"
    )
    options, _ = parse_settings(toml)
    with (
        tempfile.TemporaryDirectory(prefix="apexmem-usage-") as root,
        Memory.open(
            Path(root) / "mem", settings=options, clock=lambda: now[0], embedder=HashingEmbedder()
        ) as memory,
    ):
        facts = [
            memory.assert_fact(subject="Alice", relation="knows", object=name).fact_id
            for name in ("Bob", "Carol", "Dora")
        ]
        for step, arg in said:
            if step == "retrieve":
                used = FactsRetrieved(fact_ids=[facts[i] for i in arg])
                memory.log.append([NewEvent(stream_id=uuid.uuid4(), version=1, data=used)])
            elif step == "tick":
                now[0] += timedelta(seconds=arg)
            else:
                memory.decay_usage(force=arg)
        incremental = memory.retrieval_counts(facts)
        rebuilt = ReadModelStore(Path(root) / "rebuilt.db")
        Runner(memory.log, rebuilt, batch_size=batch).catch_up()

        assert incremental == {f: c for f, c in _by_hand(memory).items() if f in facts}
        with memory.store.read() as mine, rebuilt.read() as theirs:
            ours, rebuilt_rows = dump(mine), dump(theirs)
        for table in ("retrievals", "usage_decays", "facts", "entities"):
            assert ours[table] == rebuilt_rows[table]
        rebuilt.close()
