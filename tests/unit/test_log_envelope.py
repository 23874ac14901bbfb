"""Every append's envelope (actor, episode, cause) is checked by the log itself: a value that
would not decode is refused before anything is written, whichever call made the event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from apexmem import HashingEmbedder, Memory, ValidationError
from apexmem.events import EventLog, FactsRetrieved, NewEvent

LONG = "é" * 129  # 258 bytes, 129 characters


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    now = [datetime(2024, 1, 1, tzinfo=UTC)]
    with Memory.open(tmp_path / "mem", clock=lambda: now[0], embedder=HashingEmbedder()) as mem:
        mem.assert_fact(subject="Alice", relation="knows", object="Bob Stone")
        mem.observe_entity(name="Lonely", entity_type="person")
        now[0] += timedelta(days=200)  # Lonely is an orphan to evict
        yield mem


@pytest.mark.parametrize("actor", [123, b"agent", ["agent"], LONG])
@pytest.mark.parametrize("call", ["decay_usage", "evict", "detect_communities", "link_notes"])
def test_maintenance_with_a_bad_actor_writes_nothing_and_the_log_still_reads(
    memory: Memory, call: str, actor: object
) -> None:
    before = memory.log.last_position()
    arguments: dict[str, Any] = {"actor": actor}
    if call == "decay_usage":
        arguments["force"] = True

    with pytest.raises(ValidationError) as refused:
        getattr(memory, call)(**arguments)

    assert refused.value.field.endswith("actor")
    assert memory.log.last_position() == before
    memory.rebuild()
    assert memory.verify().ok and [f.object for f in memory.facts_about("Alice")] == ["Bob Stone"]


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("actor", 7, "is not a string"),
        ("episode", LONG, "is longer than 256 bytes"),
        ("cause", 7.5, "is not a string"),
    ],
)
def test_the_log_refuses_an_envelope_that_would_not_decode(
    tmp_path: Path, field: str, value: object, rule: str
) -> None:
    log = EventLog(tmp_path / "events.db")
    good = NewEvent(stream_id=uuid4(), version=1, data=FactsRetrieved(fact_ids=[uuid4()]))
    envelope: dict[str, Any] = {field: value}
    bad = NewEvent(
        stream_id=uuid4(), version=1, data=FactsRetrieved(fact_ids=[uuid4()]), **envelope
    )

    with pytest.raises(ValidationError, match=rule) as refused:
        log.append([good, bad])

    assert refused.value.field == f"[1].{field}"
    assert log.last_position() == 0
    log.append([good])
    assert [e.position for e in log.read()] == [1]
