"""A used idempotency key writes nothing; any edit, removal or reordering of stored events is found.

Tampering goes straight at `events.db` with sqlite3 while the memory is closed, the way an
operator (or an attacker) with file access would; `verify()` must name the first position
the tampering touched, in an event or in the chain hash stored for it.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from uuid import uuid4

from hypothesis import given
from hypothesis import strategies as st

from apexmem import FactRef, Memory
from apexmem.events import EventLog, FactsRetrieved, NewEvent

EVENTS_DB = "events.db"
SUBJECTS = ("Alice", "Bob", "Carol")
OBJECTS = ("Acme", "Globex", "Vim", "Paris")
RELATIONS = ("works_at", "uses", "lives_in")


def ticking_clock() -> Callable[[], datetime]:
    """A deterministic clock, one second per reading."""
    ticks = [datetime(2024, 1, 1, tzinfo=UTC)]

    def now() -> datetime:
        ticks.append(ticks[-1] + timedelta(seconds=1))
        return ticks[-1]

    return now


@contextmanager
def fresh_directory() -> Iterator[Path]:
    """A temporary directory per hypothesis example (function fixtures are shared by all)."""
    with tempfile.TemporaryDirectory() as directory:
        yield Path(directory)


FACTS = st.fixed_dictionaries(
    {
        "subject": st.sampled_from(SUBJECTS),
        "relation": st.sampled_from(RELATIONS),
        "object": st.sampled_from(OBJECTS),
        "confidence": st.sampled_from([0.4, 0.7, 1.0]),
        "valid_from": st.integers(min_value=0, max_value=1000).map(
            lambda d: datetime(2020, 1, 1, tzinfo=UTC) + timedelta(days=d)
        ),
    }
)
BATCHES = st.lists(st.lists(FACTS, min_size=1, max_size=4), min_size=1, max_size=5)


# Idempotency at the log ---------------------------------------------------------------------


@dataclass(frozen=True)
class Append:
    """An append of `size` fresh events, under `key` when given."""

    size: int
    key: str | None


APPENDS = st.lists(
    st.builds(
        Append,
        size=st.integers(min_value=0, max_value=4),
        key=st.none() | st.sampled_from(["a", "b", "c"]),
    ),
    min_size=1,
    max_size=10,
)


def fresh_events(size: int) -> list[NewEvent]:
    """`size` events on new streams, so only the key can make an append a repeat."""
    return [
        NewEvent(stream_id=s, version=1, data=FactsRetrieved(fact_ids=[s]))
        for s in (uuid4() for _ in range(size))
    ]


@given(appends=APPENDS)
def test_an_append_under_a_used_key_writes_nothing_and_returns_the_first_positions(
    appends: list[Append],
) -> None:
    with fresh_directory() as directory:
        log = EventLog(directory / EVENTS_DB, clock=ticking_clock())
        first_positions: dict[str, list[int]] = {}
        try:
            for append in appends:
                before = log.last_position()

                result = log.append(fresh_events(append.size), idempotency_key=append.key)

                if append.key is not None and append.key in first_positions:
                    assert result.repeated
                    assert result.positions == first_positions[append.key]
                    assert log.last_position() == before
                else:
                    assert not result.repeated
                    assert len(result.positions) == append.size
                    assert all(p > before for p in result.positions)
                    if append.key is not None:
                        first_positions[append.key] = result.positions
        finally:
            log.close()


# Idempotency through the facade -------------------------------------------------------------


def assert_batch(memory: Memory, facts: list[dict[str, Any]], key: str) -> list[FactRef]:
    """Assert one batch of facts under an idempotency key."""
    return memory.assert_facts(facts, idempotency_key=key)


@given(first=BATCHES, second=BATCHES)
def test_a_batch_under_a_used_key_returns_the_first_results_and_writes_nothing(
    first: list[list[dict[str, Any]]], second: list[list[dict[str, Any]]]
) -> None:
    with fresh_directory() as directory, Memory.open(directory, clock=ticking_clock()) as memory:
        results = [assert_batch(memory, batch, f"key-{i}") for i, batch in enumerate(first)]
        position = memory.log.last_position()
        replay = [second[i % len(second)] for i in range(len(first))]

        repeated = [assert_batch(memory, batch, f"key-{i}") for i, batch in enumerate(replay)]

        assert repeated == results
        assert memory.log.last_position() == position
        assert memory.verify().ok


# Tampering ----------------------------------------------------------------------------------

Tamper = Literal["flip", "delete", "swap", "chain"]


def build_log(directory: Path, batches: list[list[dict[str, Any]]]) -> int:
    """Write the batches (plus a message) through the facade; returns the last position."""
    with Memory.open(directory, clock=ticking_clock()) as memory:
        for batch in batches:
            memory.assert_facts(batch)
        memory.record_message(episode="conv-1", speaker="user", text="hello")
        assert memory.verify().ok
        return memory.log.last_position()


def flip_byte(db: sqlite3.Connection, position: int, index: int, mask: int) -> None:
    """XOR one byte of the stored state at `position` with a non-zero mask."""
    [(state,)] = db.execute("SELECT state FROM stored_events WHERE rowid=?", (position,))
    data = bytearray(state)
    data[index % len(data)] ^= mask
    db.execute("UPDATE stored_events SET state=? WHERE rowid=?", (bytes(data), position))


def flip_chain_byte(db: sqlite3.Connection, position: int, index: int, mask: int) -> None:
    """XOR one byte of the chain hash stored for `position` (in its append's row)."""
    [(last, chain)] = db.execute(
        "SELECT position, chain FROM log_index WHERE position >= ? ORDER BY position LIMIT 1",
        (position,),
    )
    data = bytearray(chain)
    data[(position - (last - len(data) // 32 + 1)) * 32 + index % 32] ^= mask
    db.execute("UPDATE log_index SET chain=? WHERE position=?", (bytes(data), last))


def delete_row(db: sqlite3.Connection, position: int) -> None:
    """Remove the record at `position` (its chain row stays)."""
    db.execute("DELETE FROM stored_events WHERE rowid=?", (position,))


def swap_rows(db: sqlite3.Connection, first: int, second: int) -> None:
    """Exchange the whole contents of two records, keeping their positions."""
    columns = "originator_id, originator_version, topic, state"
    rows = {
        row[0]: row[1:]
        for row in db.execute(
            f"SELECT rowid, {columns} FROM stored_events WHERE rowid IN (?, ?)", (first, second)
        )
    }
    db.execute("DELETE FROM stored_events WHERE rowid IN (?, ?)", (first, second))
    db.executemany(
        f"INSERT INTO stored_events (rowid, {columns}) VALUES (?, ?, ?, ?, ?)",
        [(first, *rows[second]), (second, *rows[first])],
    )


@given(batches=BATCHES, kind=st.sampled_from(["flip", "delete", "swap", "chain"]), data=st.data())
def test_any_flipped_byte_deleted_row_or_swapped_pair_is_found_at_its_first_position(
    batches: list[list[dict[str, Any]]], kind: Tamper, data: st.DataObject
) -> None:
    with fresh_directory() as directory:
        last = build_log(directory, batches)
        first = data.draw(st.integers(min_value=1, max_value=last - 1), label="position")
        other = data.draw(st.integers(min_value=first + 1, max_value=last), label="other")
        with sqlite3.connect(directory / EVENTS_DB) as db:
            if kind in ("flip", "chain"):
                index = data.draw(st.integers(min_value=0, max_value=10_000), label="byte")
                mask = data.draw(st.integers(1, 255), label="mask")
                (flip_byte if kind == "flip" else flip_chain_byte)(db, first, index, mask)
            elif kind == "delete":
                delete_row(db, first)
            else:
                swap_rows(db, first, other)
        db.close()

        with Memory.open(directory, clock=ticking_clock()) as memory:
            report = memory.verify()

        assert not report.ok
        assert report.first_bad_position == first
        assert report.events_checked == first - 1
        assert report.reason


@given(batches=BATCHES)
def test_removing_the_last_event_is_found(batches: list[list[dict[str, Any]]]) -> None:
    with fresh_directory() as directory:
        last = build_log(directory, batches)
        with sqlite3.connect(directory / EVENTS_DB) as db:
            delete_row(db, last)
        db.close()

        with Memory.open(directory, clock=ticking_clock()) as memory:
            report = memory.verify()

        assert not report.ok
        assert report.first_bad_position == last


def test_an_untouched_log_verifies_and_reports_its_head(tmp_path: Path) -> None:
    facts: list[dict[str, Any]] = [{"subject": "Alice", "relation": "uses", "object": "Vim"}]
    last = build_log(tmp_path, [facts])

    with Memory.open(tmp_path, clock=ticking_clock()) as memory:
        report = memory.verify()
        chains = memory.log.chains([last])

    assert report.ok
    assert report.events_checked == last
    assert report.first_bad_position is None
    assert report.head == chains[last].hex()
