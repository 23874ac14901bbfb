"""Every log backend holds the same records and the same chain for the same appends."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st
from sample_events import event
from storage_backends import LOGS, T0, discard, open_log

from apexmem.events import ConcurrencyError, Log, NewEvent
from apexmem.replay.verify import verify

STREAMS = [UUID(int=n << 64 | n) for n in range(1, 5)]
"""Few streams, so appends meet versions already taken."""

APPEND = st.tuples(
    st.lists(
        st.tuples(st.integers(0, len(STREAMS) - 1), st.integers(0, 2), st.integers(0, 1)),
        max_size=4,
    ),
    st.sampled_from([None, "a", "b"]),
    st.integers(-2, 3),
)
"""One append: (stream, kind, version skip) per event, an idempotency key, a clock step."""


def stepped_clock(steps: list[int]) -> Callable[[], datetime]:
    """A clock that moves by the next of `steps` seconds (back too) at each reading."""
    now = [T0]

    def read() -> datetime:
        now[0] += timedelta(seconds=steps.pop(0) if steps else 1)
        return now[0]

    return read


def run(log: Log, appends: list[tuple[list[tuple[int, int, int]], str | None, int]]) -> list[str]:
    """Make every append on `log`; what each one did (positions, repeated, or a conflict)."""
    versions = dict.fromkeys(STREAMS, 0)
    outcomes: list[str] = []
    for events, key, _ in appends:
        batch = []
        for stream_at, kind, skip in events:
            stream = STREAMS[stream_at]
            versions[stream] += 1 - skip  # a skip of 1 reuses the last version: a conflict
            version = max(versions[stream], 1)
            batch.append(
                NewEvent(
                    stream_id=stream, version=version, data=event(kind, stream, stream, version)
                )
            )
        try:
            result = log.append(batch, idempotency_key=key, receipt=b"r")
        except ConcurrencyError:
            outcomes.append("conflict")
            versions = {s: max([0, *(e.version for e in log.read_stream(s))]) for s in STREAMS}
            continue
        outcomes.append(f"{result.positions} {result.repeated} {result.recorded_at}")
    return outcomes


@given(st.lists(APPEND, max_size=6))
def test_any_appends_read_back_and_chain_alike_on_every_backend(
    appends: list[tuple[list[tuple[int, int, int]], str | None, int]],
) -> None:
    results = []
    with tempfile.TemporaryDirectory() as directory:
        for backend in LOGS:
            log = open_log(backend, Path(directory), stepped_clock([a[2] for a in appends]))
            try:
                outcomes = run(log, appends)
                results.append(
                    (outcomes, list(log.read()), list(log.raw_records()), verify(log).ok)
                )
            finally:
                discard(log)

    first = results[0]
    assert first[3]
    assert all(r == first for r in results[1:])
