"""A recall's nearest vectors read in one statement (`readmodels.near_rows`): each vid still
an item of the kind, with its id and the key its moment sees (None when it sees none), the
same keys `visible_facts` and `visible_messages` give, on both backends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pg_schemas import postgres_schema
from sqlalchemy import select

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.readmodels import near_rows
from apexmem.readmodels import recall as reads
from apexmem.readmodels.moment import EVERY_FACT, NOW, Lens, Moment
from apexmem.readmodels.near_rows import facts_near, messages_near
from apexmem.readmodels.vectors import vector_items


@pytest.fixture(params=["sqlite", "postgresql"])
def memory(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Callable[[], datetime]
) -> Iterator[Memory]:
    if request.param == "sqlite":
        with Memory.open(tmp_path / "mem", clock=clock, embedder=HashingEmbedder()) as opened:
            yield opened
        return
    with (
        postgres_schema("near") as url,
        Memory.open(url, clock=clock, embedder=HashingEmbedder()) as opened,
    ):
        yield opened


def _at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


def test_each_vid_comes_with_its_item_and_the_key_its_moment_sees(memory: Memory) -> None:
    memory.assert_facts([{"subject": "Ann", "relation": "knows", "object": "Ben"}])
    told = max(f.recorded_at for f in memory.facts_about("Ann"))
    memory.assert_facts([{"subject": "Ann", "relation": "knows", "object": "Cara"}])
    memory.add_messages(
        episode="e1",
        messages=[
            {"speaker": "Ann", "text": "we met in spring", "at": "2024-02-01T00:00:00+00:00"},
            {"speaker": "Ben", "text": "and again in autumn", "at": "2024-09-01T00:00:00+00:00"},
        ],
        extract=False,
    )
    memory.project()
    with memory.store.read() as connection:
        rows = connection.execute(
            select(vector_items.c.vid, vector_items.c.item_id, vector_items.c.kind)
        ).all()
        model = connection.execute(select(vector_items.c.model)).scalars().first()
        assert model is not None
        fact_vids = {r.vid: r.item_id.hex for r in rows if r.kind == "fact"}
        message_vids = {r.vid: r.item_id.hex for r in rows if r.kind == "message"}
        every = facts_near(connection, model, "fact", list(fact_vids), lens=EVERY_FACT)
        then = Lens(moment=Moment(known_at=told))
        earlier = facts_near(connection, model, "fact", list(fact_vids), lens=then)
        seen = reads.visible_facts(connection, fact_vids.values())
        seen_then = reads.visible_facts(connection, fact_vids.values(), lens=then)
        said = messages_near(connection, model, "message", list(message_vids), moment=NOW)
        spring = Moment(valid_at=_at("2024-03-01"))
        by_spring = messages_near(connection, model, "message", list(message_vids), moment=spring)
        said_keys = reads.visible_messages(connection, message_vids.values(), moment=spring)
        wrong_kind = facts_near(connection, model, "fact", list(message_vids), lens=EVERY_FACT)

    assert len(fact_vids) == 2 and len(message_vids) == 2
    assert {vid: item for vid, (item, _) in every.items()} == fact_vids
    assert dict(every.values()) == seen
    assert {item: key for item, key in earlier.values() if key is not None} == seen_then
    assert sorted(key is None for _, key in earlier.values()) == [False, True]  # Cara: later
    assert all(key is not None for _, key in said.values())
    assert {item: key for item, key in by_spring.values() if key is not None} == said_keys
    assert len(said_keys) == 1  # autumn's was said after the moment
    assert {vid: item for vid, (item, _) in by_spring.items()} == message_vids
    assert wrong_kind == {}


def test_on_sqlite_each_statement_looks_its_rows_up_by_key(tmp_path: Path) -> None:
    """No table is scanned: SQLite had materialized a parenthesized (messages JOIN
    episodes), every message, for each round (250 ms at 1,000,000 facts)."""
    plans = []
    with (
        Memory.open(tmp_path / "mem", embedder=HashingEmbedder()) as memory,
        memory.store.read() as connection,
    ):
        for prepared, shape in (
            (near_rows._MESSAGES_NEAR, (True, True)),
            (near_rows._MESSAGES_NEAR, (False, False)),
            (near_rows._FACTS_NEAR, (False, True, True, False, False)),
        ):
            params = {"vids": [1, 2, 3], "valid_at": 0, "known_at": 0, "valid_end": 0}
            text, args = prepared.expand(connection, params, *shape)
            found = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {text}", tuple(args))
            plans.append([row[-1] for row in found])

    for plan in plans:
        assert all(step.startswith("SEARCH") for step in plan), plan
