"""Decay passes on a PostgreSQL memory: the same fades recorded, shown by history and diff."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from clocks import START, Clock
from pg_schemas import postgres_schema

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder


@pytest.fixture
def url() -> Iterator[str]:
    with postgres_schema("fades") as made:
        yield made


def test_a_decay_pass_on_postgresql_records_the_fade_and_a_reinforcement_restores_it(
    url: str,
) -> None:
    clock = Clock()
    with Memory.open(url, clock=clock, embedder=HashingEmbedder()) as memory:
        tea = memory.assert_fact(subject="Alice", relation="likes", object="tea", confidence=0.5)
        memory.assert_fact(subject="Alice", relation="likes", object="coffee", confidence=1.0)
        clock.days(200)
        faded = memory.record_fades()
        nothing = memory.record_fades()
        clock.days(1)
        memory.assert_fact(subject="Alice", relation="likes", object="tea", confidence=0.5)
        restored = memory.record_fades()
        history = [e.tag for e in memory.history(fact=tea.fact_id)]
        # Transaction times on PostgreSQL are the server's: ask about every one so far.
        changes = memory.diff(START, datetime.now(UTC) + timedelta(days=1))

    assert [(f.fact_id, f.reason) for f in faded.faded] == [(tea.fact_id, "decayed")]
    assert nothing.position == 0
    assert [(f.fact_id, f.reason) for f in restored.restored] == [(tea.fact_id, "reinforced")]
    assert history.count("facts-faded.v1") == 2
    assert [c.fact_id for c in changes.faded] == [tea.fact_id]
    assert [c.fact_id for c in changes.restored] == [tea.fact_id]
