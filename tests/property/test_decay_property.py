"""The SQL condition `fresh` keeps exactly the facts the decay formula says have not faded,
for any rates and any moment."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Final

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import select

from apexmem import Memory
from apexmem.domain.decay import FADED_BELOW, confidence_at
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events.base import EDGE_TYPES
from apexmem.readmodels.decay import fresh
from apexmem.readmodels.tables import facts

START: Final = datetime(2024, 1, 1, tzinfo=UTC)
CONFIDENCES: Final = (0.05, 0.3, 0.7, 1.0)
AGES: Final = (0, 3, 40, 200, 900)
"""Days before START that each fact was last observed."""


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    """Facts of every edge type, confidence and age, written once for every example."""
    mem = Memory.open(
        tmp_path_factory.mktemp("decay") / "mem",
        clock=lambda: START,
        embedder=HashingEmbedder(),
    )
    mem.assert_facts(
        [
            {
                "subject": f"subject {i}",
                "relation": "relates_to",
                "object": f"object {i}",
                "edge_type": edge_type,
                "confidence": confidence,
                "observed_at": START - timedelta(days=age),
            }
            for i, (edge_type, confidence, age) in enumerate(
                itertools.product(EDGE_TYPES, CONFIDENCES, AGES)
            )
        ]
    )
    yield mem
    mem.close()


rates = st.fixed_dictionaries(
    {t: st.floats(min_value=0.0, max_value=10.0, allow_nan=False) for t in EDGE_TYPES}
)


@given(rates, st.integers(min_value=-30, max_value=2_000))
def test_fresh_keeps_exactly_the_facts_that_have_not_faded(
    memory: Memory, rates: dict[str, float], days_later: int
) -> None:
    now = START + timedelta(days=days_later)
    with memory.store.read() as connection:
        rows = connection.execute(
            select(
                facts.c.fact_id, facts.c.confidence, facts.c.observed_at, facts.c.edge_type
            ).where(facts.c.expired_at.is_(None))
        ).all()
        kept = set(
            connection.execute(
                select(facts.c.fact_id).where(facts.c.expired_at.is_(None), fresh(now, rates))
            ).scalars()
        )

    for row in rows:
        decayed = confidence_at(row.confidence, row.observed_at, now, rates[row.edge_type])
        if abs(decayed - FADED_BELOW) < 1e-9:  # the formula's rounding may fall either side
            continue
        assert (row.fact_id in kept) == (decayed >= FADED_BELOW)
