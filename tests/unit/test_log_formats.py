"""Stream ids as a log file stores them: 16-byte blobs in a new log, hex text in logs made
before; both open, append, read, find and verify alike."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sample_events import WHEN, event

from apexmem import Memory
from apexmem.events import ApexmemError, EventLog, NewEvent
from apexmem.events.envelope import lookup_key
from apexmem.events.located import located_id
from apexmem.events.storedids import IdFormat, StoredIds, parse_stream, stream_text
from apexmem.replay.verify import verify


def some_events(count: int) -> list[NewEvent]:
    """`count` events over three streams, a third of them keyed facts, a third messages."""
    streams = [UUID(int=n * 7919 + 1) for n in range(3)]
    versions = dict.fromkeys(streams, 0)
    made = []
    for n in range(count):
        stream = streams[n % 3]
        versions[stream] += 1
        version = versions[stream]
        made.append(
            NewEvent(
                stream_id=stream, version=version, data=event(n % 3, UUID(int=n), stream, version)
            )
        )
    return made


def column_types(path: Path) -> tuple[str, str]:
    """The stored type of the first stream id, and the declared type of the key column."""
    with sqlite3.connect(path) as db:
        [(stream,)] = db.execute("SELECT typeof(originator_id) FROM stored_events LIMIT 1")
        [(key,)] = db.execute("SELECT type FROM pragma_table_info('event_keys') WHERE name='key'")
    db.close()
    return str(stream), str(key).lower()


def test_a_new_log_stores_stream_ids_as_16_byte_blobs_and_no_lookup_keys(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.db", clock=lambda: WHEN)
    try:
        log.append(some_events(3))
    finally:
        log.close()

    with sqlite3.connect(tmp_path / "events.db") as db:
        lengths = db.execute("SELECT DISTINCT length(originator_id) FROM stored_events").fetchall()
        [(keys,)] = db.execute("SELECT COUNT(*) FROM event_keys")
    db.close()

    assert log.ids.name == "binary"
    assert column_types(tmp_path / "events.db") == ("blob", "blob")
    assert lengths == [(16,)]
    assert keys == 0  # facts and messages are found by their located ids


def test_a_log_made_with_hex_text_ids_keeps_them_when_opened_again(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    events = some_events(6)
    older = EventLog(path, clock=lambda: WHEN, ids="text")
    older.append(events[:3])
    older.close()

    log = EventLog(path, clock=lambda: WHEN)  # the default format is for new files only
    try:
        log.append(events[3:])
        fact = log.find(f"fact:{located_id(events[3].stream_id, 2)}")
        message = log.find(f"message:{located_id(events[4].stream_id, 2)}")
        stream = log.read_stream(events[0].stream_id)
        report = verify(log)
    finally:
        log.close()

    assert log.ids.name == "text"
    assert column_types(path) == ("text", "text")
    assert fact is not None and fact.position == 4
    assert message is not None and message.position == 5
    assert [e.version for e in stream] == [1, 2]
    assert report.ok and report.events_checked == 6


@pytest.mark.parametrize("ids", ["binary", "text"])
def test_a_copy_of_the_log_keeps_its_format_and_verifies(tmp_path: Path, ids: IdFormat) -> None:
    log = EventLog(tmp_path / "events.db", clock=lambda: WHEN, ids=ids)
    events = some_events(5)
    try:
        log.append(events)
        log.copy_to(tmp_path / "copy.db", until=4)
    finally:
        log.close()

    copy = EventLog(tmp_path / "copy.db", clock=lambda: WHEN)
    try:
        report = verify(copy)
        found = copy.find(f"fact:{located_id(events[3].stream_id, 2)}")
    finally:
        copy.close()

    assert copy.ids.name == ids
    assert report.ok and report.events_checked == 4
    assert found is not None and found.position == 4


def test_a_log_with_stream_ids_of_an_unknown_type_is_refused_with_the_type_named(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE stored_events (rowid INTEGER PRIMARY KEY, originator_id INTEGER, "
            "originator_version INTEGER, topic TEXT, state BLOB)"
        )
    db.close()

    with pytest.raises(ApexmemError, match=r"'INTEGER'.*BLOB.*TEXT"):
        EventLog(path)


@pytest.mark.parametrize("ids", ["binary", "text"])
@pytest.mark.parametrize("key", ["fact:not-a-uuid", "other:" + str(UUID(int=3)), "fact:", ""])
def test_a_key_no_log_could_hold_finds_nothing(tmp_path: Path, ids: IdFormat, key: str) -> None:
    log = EventLog(tmp_path / "events.db", clock=lambda: WHEN, ids=ids)
    try:
        log.append(some_events(4))
        assert log.find(key) is None
    finally:
        log.close()


def test_a_stream_id_of_the_wrong_length_is_reported_as_malformed_at_its_position(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.db"
    log = EventLog(path, clock=lambda: WHEN)
    try:
        log.append(some_events(4))
        with sqlite3.connect(path) as db:
            db.execute("UPDATE stored_events SET originator_id = x'0102' WHERE rowid = 3")
        db.close()
        report = verify(log)
    finally:
        log.close()

    assert not report.ok
    assert report.first_bad_position == 3
    assert report.reason is not None and "malformed" in report.reason


def test_a_memory_whose_log_stores_hex_text_still_writes_finds_and_rebuilds(
    tmp_path: Path,
) -> None:
    EventLog(tmp_path / "events.db", ids="text").close()  # as a memory made before would be
    with Memory.open(tmp_path) as memory:
        first = memory.assert_fact(subject="Alice", relation="works_at", object="Acme")
        memory.assert_facts(
            [
                {"subject": "Bob", "relation": "works_at", "object": "Acme"},
                {"subject": "Alice", "relation": "works_at", "object": "Initech"},
            ]
        )
        retracted = memory.retract(first.fact_id)
        history = memory.history(fact=first.fact_id)
        before = memory.as_of().facts_about("Alice")
        memory.rebuild()
        after = memory.as_of().facts_about("Alice")
        report = memory.verify()
        assert isinstance(memory.log, EventLog)
        ids = memory.log.ids.name

    assert ids == "text"
    assert retracted.fact_id == first.fact_id
    assert [h.tag for h in history][-1] == "fact-retracted.v1"
    assert before == after
    assert report.ok


@settings(max_examples=25, deadline=None)
@given(items=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.uuids()), max_size=25))
def test_both_formats_store_the_same_events_under_the_same_chain(
    items: list[tuple[int, int, UUID]],
) -> None:
    streams = [UUID(int=n * 104729 + 3) for n in range(3)]
    versions = dict.fromkeys(streams, 0)
    events = []
    for stream_index, kind, item in items:
        stream = streams[stream_index]
        versions[stream] += 1
        version = versions[stream]
        events.append(
            NewEvent(stream_id=stream, version=version, data=event(kind, item, stream, version))
        )
    seen = {}
    with tempfile.TemporaryDirectory() as work:
        for ids in ("binary", "text"):
            log = EventLog(Path(work) / f"{ids}.db", clock=lambda: WHEN, ids=ids)
            try:
                if events:
                    log.append(events)
                keys = [k for e in events if (k := lookup_key(e.data)) is not None]
                seen[ids] = (
                    list(log.read()),
                    log.read_streams(streams),
                    [log.find(k) for k in keys],
                    list(log.raw_records()),
                    verify(log),
                )
            finally:
                log.close()

    assert seen["binary"] == seen["text"]
    assert seen["binary"][4].ok


@given(stream=st.uuids())
def test_stored_stream_ids_read_back_as_the_same_uuid_and_hex(stream: UUID) -> None:
    for ids in ("binary", "text"):
        [stored] = StoredIds(ids).streams([stream])
        assert parse_stream(stored) == stream
        assert stream_text(stored) == stream.hex
