"""The append-only EventLog on a real SQLite file: batches, positions, reads, time, keys."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest

from apexmem.events import (
    EpisodeStarted,
    EventLog,
    FactAsserted,
    FactRetracted,
    FactsRetrieved,
    NewEvent,
    ValidationError,
)
from apexmem.events.located import located_id
from apexmem.events.logreads import changed_since
from apexmem.replay.verify import verify

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def settable_clock(times: list[datetime]) -> Callable[[], datetime]:
    """A clock that reads the last element of `times` (append to move it, either way)."""
    return lambda: times[-1]


@pytest.fixture
def times() -> list[datetime]:
    """The readings of the log's clock: append to change the time."""
    return [T0]


@pytest.fixture
def log(tmp_path: Path, times: list[datetime]) -> Iterator[EventLog]:
    """An empty log in a fresh file, on a clock the test controls."""
    opened = EventLog(tmp_path / "events.db", clock=settable_clock(times))
    yield opened
    opened.close()


def retrieved(stream: UUID, version: int) -> NewEvent:
    """A small event at `version` of `stream`."""
    return NewEvent(stream_id=stream, version=version, data=FactsRetrieved(fact_ids=[stream]))


def asserted(stream: UUID, version: int) -> NewEvent:
    """A fact assertion at `version` of the slot `stream`, with the id that locates it."""
    data = FactAsserted(
        fact_id=located_id(stream, version),
        subject_id=uuid4(),
        relation="works_at",
        object_id=uuid4(),
        edge_type="semantic",
        fact="Alice works_at Acme",
        confidence=0.8,
        valid_from=T0,
        observed_at=T0,
        outcome="created",
    )
    return NewEvent(stream_id=stream, version=version, data=data, actor="agent-1")


def test_an_empty_log_has_no_positions(log: EventLog) -> None:
    last = log.last_position()

    assert last == 0
    assert list(log.read()) == []


def test_positions_increase_across_appends(log: EventLog) -> None:
    first, second = uuid4(), uuid4()

    one = log.append([retrieved(first, 1), retrieved(second, 1)])
    two = log.append([retrieved(first, 2)])

    assert one.positions == [1, 2]
    assert two.positions == [3]
    assert [e.position for e in log.read()] == [1, 2, 3]
    assert log.last_position() == 3


def test_one_batch_shares_one_recorded_at(log: EventLog, times: list[datetime]) -> None:
    times.append(T0 + timedelta(hours=1))

    result = log.append([retrieved(uuid4(), 1), retrieved(uuid4(), 1)])

    assert result.recorded_at == T0 + timedelta(hours=1)
    assert {e.recorded_at for e in log.read()} == {T0 + timedelta(hours=1)}


def test_recorded_at_moves_forward_even_when_the_clock_goes_backwards(
    log: EventLog, times: list[datetime]
) -> None:
    log.append([retrieved(uuid4(), 1)])
    times.append(T0 - timedelta(days=365))

    result = log.append([retrieved(uuid4(), 1)])
    times.append(T0 + timedelta(seconds=5))
    log.append([retrieved(uuid4(), 1)])

    assert result.recorded_at == T0 + timedelta(microseconds=1)
    stamps = [e.recorded_at for e in log.read()]
    assert stamps == [T0, T0 + timedelta(microseconds=1), T0 + timedelta(seconds=5)]


def test_an_event_keeps_its_stream_version_tag_and_provenance(log: EventLog) -> None:
    stream = uuid4()
    event = asserted(stream, 1)

    log.append([event])

    [stored] = log.read()
    assert stored.stream_id == stream
    assert stored.version == 1
    assert stored.tag == "fact-asserted.v1"
    assert stored.actor == "agent-1"
    assert stored.episode is None
    assert stored.data == event.data


def test_reading_by_tag_returns_only_those_events_in_order(log: EventLog) -> None:
    slot, episode = uuid4(), uuid4()
    log.append([asserted(slot, 1), retrieved(uuid4(), 1)])
    log.append(
        [
            NewEvent(
                stream_id=episode,
                version=1,
                data=EpisodeStarted(episode_id=episode, conversation="c"),
            )
        ]
    )
    log.append([asserted(slot, 2)])

    facts = list(log.read(tags=["fact-asserted.v1"]))
    mixed = list(log.read(tags=["fact-asserted.v1", "episode-started.v1"]))

    assert [e.position for e in facts] == [1, 4]
    assert [e.position for e in mixed] == [1, 3, 4]


def test_reading_a_position_range_includes_both_ends(log: EventLog) -> None:
    stream = uuid4()
    log.append([retrieved(stream, v) for v in range(1, 8)])

    window = list(log.read(start=3, stop=5))
    tail = list(log.read(start=6))

    assert [e.position for e in window] == [3, 4, 5]
    assert [e.version for e in window] == [3, 4, 5]
    assert [e.position for e in tail] == [6, 7]


def test_reading_past_the_end_yields_nothing(log: EventLog) -> None:
    log.append([retrieved(uuid4(), 1)])

    after = list(log.read(start=2))

    assert after == []


def test_read_streams_groups_events_by_stream_oldest_first(log: EventLog) -> None:
    first, second, absent = uuid4(), uuid4(), uuid4()
    log.append([retrieved(first, 1), retrieved(second, 1)])
    log.append([retrieved(second, 2), retrieved(first, 2)])

    found = log.read_streams([first, second, absent, first])

    assert set(found) == {first, second}
    assert [e.version for e in found[first]] == [1, 2]
    assert [e.position for e in found[first]] == [1, 4]
    assert [e.position for e in found[second]] == [2, 3]


def test_read_streams_can_skip_versions_already_known(log: EventLog) -> None:
    stream = uuid4()
    log.append([retrieved(stream, v) for v in range(1, 5)])

    newer = log.read_stream(stream, after_version=2)

    assert [e.version for e in newer] == [3, 4]


def test_position_at_compares_instants_across_timezones(log: EventLog) -> None:
    log.append([retrieved(uuid4(), 1)])
    plus_two = timezone(timedelta(hours=2))

    same_instant = log.position_at(T0.astimezone(plus_two))
    just_before = log.position_at((T0 - timedelta(seconds=1)).astimezone(plus_two))

    assert (same_instant, just_before) == (1, 0)


def test_find_returns_the_assertion_stored_under_its_fact_key(log: EventLog) -> None:
    slot = uuid4()
    fact = located_id(slot, 1)
    log.append([retrieved(uuid4(), 1), asserted(slot, 1)])

    found = log.find(f"fact:{fact}")
    missing = log.find(f"fact:{uuid4()}")

    assert found is not None
    assert found.position == 2
    assert found.stream_id == slot
    assert isinstance(found.data, FactAsserted)
    assert found.data.fact_id == fact
    assert missing is None


def test_a_fact_whose_id_is_not_where_it_is_appended_is_refused_and_nothing_written(
    log: EventLog,
) -> None:
    slot = uuid4()
    elsewhere = asserted(slot, 2)  # the id of version 2, appended at version 1
    misplaced = NewEvent(stream_id=slot, version=1, data=elsewhere.data)

    with pytest.raises(ValidationError) as raised:
        log.append([retrieved(uuid4(), 1), misplaced])

    assert raised.value.field == "[1].data.fact_id"
    assert raised.value.value == str(located_id(slot, 2))
    assert "is not the located id of version 1" in raised.value.rule
    assert log.last_position() == 0


def test_find_answers_a_located_id_only_with_the_event_it_names(log: EventLog) -> None:
    slot = uuid4()
    log.append([retrieved(slot, 1), asserted(slot, 2)])

    at_a_retrieval = log.find(f"fact:{located_id(slot, 1)}")
    as_a_message = log.find(f"message:{located_id(slot, 2)}")
    past_the_end = log.find(f"fact:{located_id(slot, 3)}")
    found = log.find(f"fact:{located_id(slot, 2)}")

    assert (at_a_retrieval, as_a_message, past_the_end) == (None, None, None)
    assert found is not None and found.position == 2


def test_find_is_not_fooled_by_later_events_about_the_same_fact(log: EventLog) -> None:
    slot = uuid4()
    fact = located_id(slot, 1)
    log.append([asserted(slot, 1)])
    retraction = FactRetracted(fact_id=fact, reason="wrong")
    log.append([NewEvent(stream_id=slot, version=2, data=retraction)])

    found = log.find(f"fact:{fact}")

    assert found is not None
    assert found.position == 1


def test_reopening_the_file_keeps_every_event_key_and_time(
    tmp_path: Path, times: list[datetime]
) -> None:
    path = tmp_path / "events.db"
    slot = uuid4()
    fact = located_id(slot, 1)
    first = EventLog(path, clock=settable_clock(times))
    first.append([asserted(slot, 1), retrieved(uuid4(), 1)], idempotency_key="k")
    before = list(first.read())
    first.close()

    reopened = EventLog(path, clock=settable_clock(times))
    after = list(reopened.read())
    found = reopened.find(f"fact:{fact}")
    repeated = reopened.append([retrieved(uuid4(), 1)], idempotency_key="k")
    next_one = reopened.append([retrieved(slot, 2)])
    reopened.close()

    assert after == before
    assert found is not None and found.position == 1
    assert repeated.repeated and repeated.positions == [1, 2]
    assert next_one.positions == [3]


def test_a_reopened_log_never_records_earlier_than_its_last_event(
    tmp_path: Path, times: list[datetime]
) -> None:
    path = tmp_path / "events.db"
    first = EventLog(path, clock=settable_clock(times))
    first.append([retrieved(uuid4(), 1)])
    first.close()
    times.append(T0 - timedelta(days=1))

    reopened = EventLog(path, clock=settable_clock(times))
    result = reopened.append([retrieved(uuid4(), 1)])
    reopened.close()

    assert result.recorded_at == T0 + timedelta(microseconds=1)


def test_vacuum_keeps_every_position_and_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    log = EventLog(path)
    streams = [uuid4() for _ in range(5)]
    log.append([retrieved(s, 1) for s in streams])
    log.append([retrieved(streams[0], 2)])
    before = [(e.position, e.stream_id, e.version) for e in log.read()]
    log.close()
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("VACUUM")
    connection.close()

    reopened = EventLog(path)
    after = [(e.position, e.stream_id, e.version) for e in reopened.read()]
    report = verify(reopened)
    reopened.close()

    assert after == before
    assert report.ok


def test_ids_states_and_chain_links_are_stored_as_blobs(log: EventLog) -> None:
    stream = uuid4()
    log.append([asserted(stream, 1), retrieved(uuid4(), 1)])

    connection = sqlite3.connect(log.path)
    try:
        records = connection.execute(
            "SELECT typeof(originator_id), typeof(state), length(originator_id) FROM stored_events"
        ).fetchall()
        links = connection.execute(
            "SELECT position, typeof(chain), length(chain) FROM log_index"
        ).fetchall()
        first = connection.execute(
            "SELECT originator_id FROM stored_events WHERE rowid = 1"
        ).fetchone()[0]
    finally:
        connection.close()

    assert records == [("blob", "blob", 16)] * 2
    assert links == [(2, "blob", 64)]  # one row per append: its events' hashes, in order
    assert first == stream.bytes
    assert next(e.stream_id for e in log.read()) == stream
    assert verify(log).ok


def test_changed_since_reads_only_the_rows_after_the_position(log: EventLog) -> None:
    early, late = uuid4(), uuid4()
    log.append([retrieved(early, 1), retrieved(uuid4(), 1)])
    log.append([asserted(late, 1), retrieved(late, 2)])
    plans: list[str] = []
    connection = sqlite3.connect(log.path)

    def query(sql: str, params: Sequence[Any] = ()) -> list[Any]:
        plan = connection.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
        plans.append(" ".join(str(step[3]) for step in plan))
        return connection.execute(sql, params).fetchall()

    try:
        streams, tags = changed_since(query, 2)
    finally:
        connection.close()

    assert streams == [late]
    assert tags == ["fact-asserted.v1", "facts-retrieved.v1"]
    # A range of the rowid, not a scan of the (stream, version) index growing with the log.
    assert plans == ["SEARCH stored_events USING INTEGER PRIMARY KEY (rowid>?)"]
