"""The log's per-batch shortcuts (stream ids and lookup keys made for a whole batch at once,
reads grouped by stream) store and find exactly what the per-event definitions say."""

from __future__ import annotations

import tempfile
from pathlib import Path
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st
from sample_events import WHEN, event

from apexmem.events import EventLog, NewEvent
from apexmem.events.envelope import lookup_key
from apexmem.service.cache import StateCache

# Streams from a small pool, so one batch puts several events on the same stream.
EVENTS = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 2), st.uuids()), min_size=1, max_size=30
)


@settings(max_examples=30)
@given(batches=st.lists(EVENTS, min_size=1, max_size=3))
def test_every_keyed_event_is_found_and_every_stream_reads_back_in_order(
    batches: list[list[tuple[int, int, UUID]]],
) -> None:
    streams = [UUID(int=n * 7919 + 1) for n in range(4)]
    versions = dict.fromkeys(streams, 0)
    appended: list[NewEvent] = []
    with tempfile.TemporaryDirectory() as work:
        log = EventLog(Path(work) / "events.db", clock=lambda: WHEN)
        try:
            for batch in batches:
                made = []
                for stream_number, kind, item in batch:
                    stream = streams[stream_number]
                    versions[stream] += 1
                    version = versions[stream]
                    made.append(
                        NewEvent(
                            stream_id=stream,
                            version=version,
                            data=event(kind, item, stream, version),
                        )
                    )
                log.append(made)
                appended.extend(made)

            found = {
                key: log.find(key) for e in appended if (key := lookup_key(e.data)) is not None
            }
            read = log.read_streams([*reversed(streams), streams[0]])
            raw = [(r.stream_id, r.version) for r in log.raw_records()]
        finally:
            log.close()

    assert raw == [(e.stream_id.hex, e.version) for e in appended]
    for key, record in found.items():
        assert record is not None and lookup_key(record.data) == key
    assert set(read) == {e.stream_id for e in appended}
    for stream, records in read.items():
        assert [(r.stream_id, r.version, r.data) for r in records] == [
            (e.stream_id, e.version, e.data) for e in appended if e.stream_id == stream
        ]


@given(
    cached=st.lists(st.integers(0, 30), max_size=20),
    asked=st.lists(st.integers(0, 30), max_size=20),
)
def test_missing_names_each_uncached_stream_once_in_the_order_asked(
    cached: list[int], asked: list[int]
) -> None:
    cache = StateCache()
    cache.put_all((key, "state") for key in cached)

    missing = cache.missing(UUID(int=key) for key in asked)

    expected = [key for key in dict.fromkeys(asked) if key not in cached]
    assert [stream.int for stream in missing] == expected
