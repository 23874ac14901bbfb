"""Links between facts on a PostgreSQL memory: told, walked, followed by recall, shown by
history, made by the usage pass from co-occurrence, and the same after a rebuild."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from pg_schemas import postgres_schema

from apexmem import Memory, parse_settings
from apexmem.cli.ids import short_fact


@pytest.fixture
def url() -> Iterator[str]:
    with postgres_schema("links") as made:
        yield made


def test_links_on_postgresql_are_walked_followed_and_rebuilt(url: str) -> None:
    settings, _ = parse_settings("[memory.vectors]\nenabled = false\n")
    with Memory.open(url, settings=settings) as memory:
        pump = memory.assert_fact(
            subject="heat pump", relation="noted", fact="The heat pump lost its connection"
        ).fact_id
        cause = memory.assert_fact(
            subject="coordinator", relation="noted", fact="Coordinator firmware is outdated"
        ).fact_id
        tea = memory.assert_fact(subject="Alice", relation="drinks", object="tea").fact_id
        coffee = memory.assert_fact(subject="Bob", relation="drinks", object="coffee").fact_id
        made = memory.link(short_fact(pump), short_fact(cause), "CAUSED_BY", 0.8)
        hits = {h.item_id: h for h in memory.recall("why did the heat pump disconnect")}
        before = made.recorded_at - timedelta(microseconds=1)
        then = [
            h.item_id for h in memory.recall("why did the heat pump disconnect", known_at=before)
        ]
        for _ in range(3):
            memory.recall("Alice and Bob")
        usage = memory.decay_usage(force=True)
        graph = memory.fact_graph(cause, depth=2)
        history = [e.tag for e in memory.history(fact=cause)]
        memory.rebuild()
        rebuilt = memory.fact_graph(cause, depth=2)
        paired = memory.fact_graph(tea)

    assert (made.source, made.target, made.link_type) == (pump, cause, "caused_by")
    assert any(w.startswith("fact link:") for w in hits[cause].why)
    assert pump in then and cause not in then
    assert usage.linked == 1
    assert [(d, link.link_type) for d, link in graph.direct()] == [("in", "caused_by")]
    assert rebuilt == graph
    assert "fact-linked.v1" in history
    assert [link.target if link.source == tea else link.source for link in paired.links] == [coffee]
