"""The PostgreSQL log's shorter locked section: events encoded before the lock
(`encode_ahead`) and stamped again under it when another append took a later time, the index
and key rows sent with the COMMIT, and `changed_since` answered from rows read before."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from uuid import UUID, uuid4

import pytest
from clocks import START, Clock
from storage_backends import POSTGRES_URL, drop_schema, fresh_schema

from apexmem.events import FactsRetrieved, NewEvent
from apexmem.events.postgres_append import prepare, restamp
from apexmem.events.postgres_log import PostgresLog
from apexmem.events.timeutil import to_micros
from apexmem.replay.verify import verify

T0 = START


@pytest.fixture
def schema() -> Iterator[str]:
    name = fresh_schema()
    yield name
    drop_schema(name)


def _events(count: int, *, actor: str | None = None) -> list[NewEvent]:
    return [
        NewEvent(
            stream_id=uuid4(),
            version=1,
            data=FactsRetrieved(fact_ids=[uuid4()]),
            actor=actor if i % 2 else None,
            episode="ep" if i % 3 == 0 else None,
        )
        for i in range(count)
    ]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (T0, T0 + timedelta(microseconds=1)),  # no fraction -> a fraction: longer
        (T0 + timedelta(microseconds=5), T0 + timedelta(seconds=1)),  # and back: shorter
        (T0 + timedelta(microseconds=5), T0 + timedelta(days=400, microseconds=7)),
    ],
)
def test_restamping_gives_the_bytes_encoding_at_the_new_time_gives(
    before: datetime, after: datetime
) -> None:
    events = _events(7, actor="someone")
    restamped = restamp(prepare(events, to_micros(before)), events, to_micros(after))
    again = prepare(events, to_micros(after))

    assert restamped.micros == again.micros
    assert restamped.states == again.states
    assert restamped.tags == again.tags
    assert restamped.rows.data(11) == again.rows.data(11)


def test_events_encoded_ahead_are_stamped_after_an_append_that_took_a_later_time(
    schema: str,
) -> None:
    clock = Clock()
    log = PostgresLog(POSTGRES_URL, schema=schema, clock=clock)
    try:
        ahead = _events(3, actor="a")
        log.encode_ahead(ahead)  # stamped T0, before the lock
        clock.now = T0 + timedelta(seconds=10)
        other = log.append(_events(2))  # another writer got the lock first, later
        with log.locked() as locked:
            appended = locked.append(ahead)

        assert appended.recorded_at is not None and other.recorded_at is not None
        assert appended.recorded_at > other.recorded_at
        stored = list(log.read(start=appended.positions[0]))
        assert [e.stream_id for e in stored] == [e.stream_id for e in ahead]
        assert {e.recorded_at for e in stored} == {appended.recorded_at}
        assert [e.actor for e in stored] == [e.actor for e in ahead]
        assert verify(log).ok
    finally:
        log.close()


def test_events_encoded_ahead_are_used_only_for_the_very_same_events(schema: str) -> None:
    log = PostgresLog(POSTGRES_URL, schema=schema)
    try:
        ahead = _events(2)
        log.encode_ahead(ahead)
        others = [NewEvent(stream_id=e.stream_id, version=1, data=FactsRetrieved(fact_ids=[]))
                  for e in ahead]  # fmt: skip
        with log.locked() as locked:
            appended = locked.append(others)

        stored = list(log.read(start=appended.positions[0]))
        assert [e.data for e in stored] == [e.data for e in others]
        assert verify(log).ok
    finally:
        log.close()


def test_a_key_appended_under_the_lock_is_found_under_the_same_lock(schema: str) -> None:
    log = PostgresLog(POSTGRES_URL, schema=schema)
    try:
        events = _events(2)
        with log.locked() as locked:
            first = locked.append(events, idempotency_key="k", receipt=b"r")
            found = locked.repeated("k")
            again = locked.append(_events(1), idempotency_key="k")
            assert locked.last_position() == 2

        assert found is not None and found.positions == first.positions == [1, 2]
        assert again.repeated and again.positions == [1, 2] and again.receipt == b"r"
        assert log.last_position() == 2
        assert log.chains([1, 2]) and verify(log).ok
    finally:
        log.close()


def test_changed_since_names_what_others_appended_and_nothing_rolled_back(schema: str) -> None:
    log = PostgresLog(POSTGRES_URL, schema=schema)
    other = PostgresLog(POSTGRES_URL, schema=schema)
    try:
        first = _events(3)
        log.append(first)
        assert set(log.changed_since(0)[0]) == {e.stream_id for e in first}

        second = _events(2)
        other.append(second)  # another process: read from the server, after what is held
        assert set(log.changed_since(3)[0]) == {e.stream_id for e in second}
        assert set(log.changed_since(4)[0]) == {second[1].stream_id}
        # an earlier position than any asked before: read again from there
        assert set(log.changed_since(1)[0]) == {e.stream_id for e in first[1:] + second}

        dropped = _events(1)
        seen: list[set[UUID]] = []

        def rolled_back() -> None:
            with log.locked() as locked:
                seen.append(set(locked.changed_since(4)[0]))  # held rows: committed only
                locked.append(dropped)
                seen.append(set(locked.changed_since(4)[0]))  # its own append, read again
                raise RuntimeError("roll back")

        with pytest.raises(RuntimeError):
            rolled_back()
        assert seen == [{second[1].stream_id}, {second[1].stream_id, dropped[0].stream_id}]
        third = _events(1)
        other.append(third)

        streams, tags = log.changed_since(4)
        assert set(streams) == {second[1].stream_id, third[0].stream_id}
        assert tags == ["facts-retrieved.v1"]
        with log.locked() as locked:
            assert set(locked.changed_since(5)[0]) == {third[0].stream_id}
        assert log.changed_since(6) == ([], [])
    finally:
        log.close()
        other.close()


def test_changed_since_holds_rows_by_position_after_an_erasure_moved_some(schema: str) -> None:
    log = PostgresLog(POSTGRES_URL, schema=schema)
    try:
        events = _events(6)
        log.append(events[:3])
        log.append(events[3:])
        with log.locked() as locked:
            locked.blank([1, 2])  # their rows are written again, after the others
        assert set(log.changed_since(0)[0]) == {e.stream_id for e in events}
        assert set(log.changed_since(2)[0]) == {e.stream_id for e in events[2:]}
        assert set(log.changed_since(4)[0]) == {e.stream_id for e in events[4:]}
    finally:
        log.close()
