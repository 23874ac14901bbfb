"""The log contract: every implementation of `events.ports.Log` passes these, written once.

The `log` fixture runs each test against every backend in `storage_backends.LOGS`.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from uuid import UUID, uuid4

import pytest
from sample_events import event
from storage_backends import LOGS, T0, discard, open_log, tamper

from apexmem.events import (
    ConcurrencyError,
    EpisodeStarted,
    FactsRetrieved,
    Log,
    NewEvent,
    ValidationError,
    lookup_key,
)
from apexmem.events.episode import MessageRecorded
from apexmem.events.fact import FactAsserted
from apexmem.events.timeutil import to_micros
from apexmem.replay.verify import Head, head, parse_head, verify


@pytest.fixture
def times() -> list[datetime]:
    """The readings of the log's clock: append to change the time (either way)."""
    return [T0]


@pytest.fixture(params=LOGS)
def log(request: pytest.FixtureRequest, tmp_path: Path, times: list[datetime]) -> Iterator[Log]:
    """An empty log of each backend, on a clock the test controls."""
    opened = open_log(request.param, tmp_path, lambda: times[-1])
    yield opened
    discard(opened)


def retrieved(stream: UUID, version: int) -> NewEvent:
    """A small event at `version` of `stream`, with no id to find it by."""
    return NewEvent(stream_id=stream, version=version, data=FactsRetrieved(fact_ids=[stream]))


def keyed(kind: int, stream: UUID, version: int) -> NewEvent:
    """A fact (0) or a message (1) whose id is located at `version` of `stream`."""
    return NewEvent(
        stream_id=stream, version=version, data=event(kind, uuid4(), stream, version), actor="a"
    )


def test_appended_events_read_back_in_order_with_their_envelope(log: Log) -> None:
    stream = uuid4()
    new = NewEvent(
        stream_id=stream,
        version=1,
        data=EpisodeStarted(episode_id=stream, conversation="c"),
        actor="agent-1",
        episode="e-1",
        cause="because",
    )

    result = log.append([new, retrieved(stream, 2)])

    [first, second] = log.read()
    assert result.positions == [1, 2]
    assert result.recorded_at == T0
    assert (first.position, first.stream_id, first.version) == (1, stream, 1)
    assert (first.tag, first.data) == ("episode-started.v1", new.data)
    assert (first.actor, first.episode, first.cause) == ("agent-1", "e-1", "because")
    assert first.recorded_at == second.recorded_at == T0
    assert (second.position, second.version, second.actor) == (2, 2, None)


def test_positions_start_at_one_and_increase_across_appends(log: Log) -> None:
    first, second = uuid4(), uuid4()

    one = log.append([retrieved(first, 1), retrieved(second, 1)])
    two = log.append([retrieved(first, 2)])

    assert one.positions == [1, 2]
    assert two.positions == [3]
    assert [e.position for e in log.read()] == [1, 2, 3]


def test_a_batch_with_one_conflicting_event_writes_nothing(log: Log) -> None:
    taken, fresh = uuid4(), uuid4()
    log.append([retrieved(taken, 1)])

    with pytest.raises(ConcurrencyError):
        log.append([retrieved(fresh, 1), retrieved(taken, 1)])

    assert log.last_position() == 1
    assert log.read_stream(fresh) == []
    assert log.append([retrieved(fresh, 1)]).positions == [2]


def test_a_batch_repeating_a_version_of_its_own_stream_conflicts(log: Log) -> None:
    stream = uuid4()

    with pytest.raises(ConcurrencyError):
        log.append([retrieved(stream, 1), retrieved(stream, 1)])

    assert log.last_position() == 0
    assert log.count() == 0


def test_a_stale_stream_version_raises_concurrency_error_and_writes_nothing(log: Log) -> None:
    stream = uuid4()
    log.append([retrieved(stream, 1), retrieved(stream, 2)])

    with pytest.raises(ConcurrencyError):
        log.append([retrieved(stream, 2)])

    assert [e.version for e in log.read_stream(stream)] == [1, 2]
    assert verify(log).ok


@pytest.mark.parametrize(
    ("field", "value"), [("actor", 7), ("episode", "x" * 1_000), ("cause", b"c")]
)
def test_an_envelope_that_would_not_decode_is_refused_and_nothing_written(
    log: Log, field: str, value: object
) -> None:
    bad = NewEvent(stream_id=uuid4(), version=1, data=FactsRetrieved(fact_ids=[]), **{field: value})  # type: ignore[arg-type]

    with pytest.raises(ValidationError, match=field):
        log.append([retrieved(uuid4(), 1), bad])

    assert log.last_position() == 0


def test_a_fact_whose_id_is_not_where_it_is_appended_is_refused(log: Log) -> None:
    stream = uuid4()
    misplaced = NewEvent(stream_id=stream, version=2, data=event(0, uuid4(), stream, 1))

    with pytest.raises(ValidationError, match="fact_id"):
        log.append([misplaced])

    assert log.count() == 0


def test_a_repeated_idempotency_key_returns_the_first_positions_and_receipt(log: Log) -> None:
    first = log.append([retrieved(uuid4(), 1)], idempotency_key="k", receipt=b"r")

    again = log.append([retrieved(uuid4(), 1)], idempotency_key="k", receipt=b"other")

    assert again.repeated and not first.repeated
    assert again.positions == first.positions == [1]
    assert again.receipt == b"r"
    assert again.recorded_at == first.recorded_at
    assert log.last_position() == 1
    assert log.repeated("k") == again
    assert log.repeated("unused") is None


def test_an_empty_append_under_a_key_is_remembered(log: Log) -> None:
    log.append([], idempotency_key="empty", receipt=b"none")

    again = log.append([retrieved(uuid4(), 1)], idempotency_key="empty")

    assert (again.repeated, again.positions, again.receipt) == (True, [], b"none")
    assert log.last_position() == 0


@pytest.mark.parametrize("key", ["", "k" * 1_025, 5])
def test_an_idempotency_key_that_would_not_decode_is_refused(log: Log, key: object) -> None:
    with pytest.raises(ValidationError, match="idempotency_key"):
        log.append([retrieved(uuid4(), 1)], idempotency_key=key)  # type: ignore[arg-type]

    assert log.last_position() == 0


def test_read_streams_groups_by_stream_oldest_first_after_a_version(log: Log) -> None:
    one, two, empty = uuid4(), uuid4(), uuid4()
    log.append([retrieved(one, 1), retrieved(two, 1)])
    log.append([retrieved(two, 2), retrieved(one, 2), retrieved(one, 3)])

    found = log.read_streams([one, two, empty, one])
    later = log.read_streams([one, two], after_version=1)

    assert found.keys() == {one, two}
    assert [(e.version, e.position) for e in found[one]] == [(1, 1), (2, 4), (3, 5)]
    assert [(e.version, e.position) for e in found[two]] == [(1, 2), (2, 3)]
    assert [e.version for e in later[one]] == [2, 3]
    assert log.read_stream(one, after_version=2) == found[one][2:]
    assert log.read_stream(empty) == []


def test_find_returns_the_fact_or_message_its_located_id_names(log: Log) -> None:
    slot, episode = uuid4(), uuid4()
    log.append([keyed(0, slot, 1), keyed(1, episode, 1), retrieved(slot, 2), keyed(0, slot, 3)])

    [first, message, unkeyed, third] = log.read()

    assert lookup_key(unkeyed.data) is None
    assert log.find(str(lookup_key(first.data))) == first
    assert log.find(str(lookup_key(third.data))) == third
    assert log.find(str(lookup_key(message.data))) == message
    assert isinstance(first.data, FactAsserted) and isinstance(message.data, MessageRecorded)
    assert log.find(f"message:{first.data.fact_id}") is None
    assert log.find(f"fact:{uuid4()}") is None
    assert log.find("fact:not-a-uuid") is None
    assert log.find(f"entity:{slot}") is None


def test_read_takes_bounds_tags_and_a_limit(log: Log) -> None:
    slot = uuid4()
    log.append([retrieved(uuid4(), 1), keyed(0, slot, 1), retrieved(uuid4(), 1)])
    log.append([keyed(0, slot, 2), retrieved(uuid4(), 1)])

    assert [e.position for e in log.read(start=2, stop=4)] == [2, 3, 4]
    assert [e.position for e in log.read(tags=["fact-asserted.v1"])] == [2, 4]
    assert [e.position for e in log.read(start=3, tags=["fact-asserted.v1"])] == [4]
    assert [e.position for e in log.read(limit=2)] == [1, 2]
    assert [e.position for e in log.read(tags=["facts-retrieved.v1"], limit=2)] == [1, 3]
    assert list(log.read(start=6)) == []
    assert list(log.read(start=3, stop=2)) == []


def test_the_head_tells_the_last_position_time_and_count(log: Log, times: list[datetime]) -> None:
    empty = (log.last_position(), log.last_recorded_at(), log.count())
    log.append([retrieved(uuid4(), 1), retrieved(uuid4(), 1)])
    times.append(T0 + timedelta(hours=1))

    log.append([retrieved(uuid4(), 1)])

    assert empty == (0, None, 0)
    assert (log.last_position(), log.count()) == (3, 3)
    assert log.last_recorded_at() == T0 + timedelta(hours=1)


def test_position_at_gives_the_last_position_recorded_at_or_before_a_time(
    log: Log, times: list[datetime]
) -> None:
    log.append([retrieved(uuid4(), 1), retrieved(uuid4(), 1)])
    times.append(T0 + timedelta(hours=1))
    log.append([retrieved(uuid4(), 1)])

    assert log.position_at(T0 - timedelta(seconds=1)) == 0
    assert log.position_at(T0) == 2
    assert log.position_at(T0 + timedelta(minutes=59)) == 2
    assert log.position_at(T0 + timedelta(hours=1)) == 3
    assert log.position_at((T0 + timedelta(hours=3)).astimezone(timezone(timedelta(hours=2)))) == 3
    assert log.position_at(T0 + timedelta(days=3650)) == 3


def test_recorded_at_never_decreases_even_when_the_clock_goes_back(
    log: Log, times: list[datetime]
) -> None:
    log.append([retrieved(uuid4(), 1)])
    times.append(T0 - timedelta(days=365))

    result = log.append([retrieved(uuid4(), 1)])
    again = log.append([retrieved(uuid4(), 1)])

    assert result.recorded_at == T0 + timedelta(microseconds=1)
    assert again.recorded_at == T0 + timedelta(microseconds=2)
    assert log.position_at(T0) == 1


def test_the_chain_verifies_and_raw_records_hold_every_position(log: Log) -> None:
    slot = uuid4()
    log.append([keyed(0, slot, 1), retrieved(uuid4(), 1)])
    log.append([retrieved(slot, 2)])

    report = verify(log)
    raw = list(log.raw_records())
    chains = log.chains([1, 2, 3, 9])

    assert (report.ok, report.events_checked) == (True, 3)
    assert [r.position for r in raw] == [1, 2, 3]
    assert chains == {r.position: r.chain for r in raw}
    assert report.head == chains[3].hex()
    assert [r.position for r in log.raw_records(start=2)] == [2, 3]


def test_an_edited_record_is_found_at_its_position(log: Log) -> None:
    log.append([retrieved(uuid4(), 1), retrieved(uuid4(), 1)])
    log.append([retrieved(uuid4(), 1)])

    tamper(log, 2)
    report = verify(log)

    assert (report.ok, report.first_bad_position, report.events_checked) == (False, 2, 1)


def test_a_locked_section_reads_its_own_appends_and_commits_them_on_exit(log: Log) -> None:
    stream = uuid4()
    log.append([retrieved(stream, 1)])

    with log.locked() as locked:
        head = locked.last_position()
        appended = locked.append([retrieved(stream, 2), retrieved(uuid4(), 1)])
        inside = (locked.last_position(), locked.appended, len(locked.read_stream(stream)))
        after = [e.position for e in locked.read_after(head)]
        changed = locked.changed_since(head)
        repeat = locked.append([retrieved(stream, 3)], idempotency_key="k")
        again = locked.append([retrieved(stream, 4)], idempotency_key="k")
        counted = locked.appended

    assert head == 1 and appended.positions == [2, 3]
    assert inside == (3, 2, 2)
    assert after == [2, 3]
    assert stream in changed[0] and changed[1] == ["facts-retrieved.v1"]
    assert again.repeated and again.positions == repeat.positions == [4]
    assert counted == 3
    assert log.last_position() == 4
    assert log.repeated("k") == again
    assert verify(log).ok


def test_an_error_inside_a_locked_section_undoes_every_append_under_it(log: Log) -> None:
    stream = uuid4()
    log.append([retrieved(stream, 1)])

    def conflicting() -> None:
        with log.locked() as locked:
            locked.append([retrieved(uuid4(), 1)], idempotency_key="k")
            locked.append([retrieved(stream, 1)])

    with pytest.raises(ConcurrencyError):
        conflicting()

    assert log.last_position() == 1
    assert log.repeated("k") is None
    assert log.append([retrieved(stream, 2)]).positions == [2]
    assert verify(log).ok


def test_reads_outside_a_held_lock_see_only_what_was_committed(log: Log) -> None:
    stream = uuid4()

    with log.locked() as locked:
        locked.append([retrieved(stream, 1)], idempotency_key="k")
        outside = (log.last_position(), log.read_stream(stream), log.repeated("k"))

    assert outside == (0, [], None)
    assert log.last_position() == 1


def test_changed_since_names_the_streams_and_tags_appended_after_a_position(log: Log) -> None:
    one, two, slot = uuid4(), uuid4(), uuid4()
    log.append([retrieved(one, 1)])
    log.append([retrieved(two, 1), keyed(0, slot, 1), retrieved(two, 2)])

    streams, tags = log.changed_since(1)
    nothing = log.changed_since(4)

    assert sorted(streams) == sorted([two, slot]) and len(streams) == 2
    assert tags == ["fact-asserted.v1", "facts-retrieved.v1"]
    assert nothing == ([], [])


def test_keyed_appends_name_each_key_with_its_positions_and_time(log: Log) -> None:
    log.append([retrieved(uuid4(), 1)])
    keyed_append = log.append([retrieved(uuid4(), 1), retrieved(uuid4(), 1)], idempotency_key="b")
    log.append([], idempotency_key="a", receipt=b"r")

    keys = list(log.keyed_appends())

    assert [k.key for k in keys] == ["a", "b"]
    assert (keys[0].first_position, keys[0].last_position) == (None, None)
    assert (keys[1].first_position, keys[1].last_position) == (2, 3)
    assert keyed_append.recorded_at is not None
    assert keys[1].recorded_at == to_micros(keyed_append.recorded_at)
    assert verify(log).ok


def test_the_head_is_the_last_position_and_its_chain_and_verify_checks_a_kept_one(
    log: Log,
) -> None:
    assert head(log) == Head(0, bytes(32).hex())
    log.append([retrieved(uuid4(), 1), retrieved(uuid4(), 1)])
    kept = head(log)
    log.append([retrieved(uuid4(), 1)])

    now = head(log)

    assert (kept.position, now.position) == (2, 3)
    assert now.chain == log.chains([3])[3].hex() == verify(log).head
    assert verify(log, expect=kept).ok
    assert verify(log, expect=parse_head(now.chain)).ok
    assert not verify(log, expect=parse_head(kept.chain)).ok
    assert not verify(log, expect=Head(2, now.chain)).ok
    assert not verify(log, expect=Head(4, now.chain)).ok
