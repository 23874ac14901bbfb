"""One append to the PostgreSQL log, inside its locked transaction: the position, time and
chain hash after the last append's, then the rows, the time-index row and the key.

What needs no lock (checking and encoding the events, their COPY bytes) can be done first
(`prepare`), with the clock read before the lock; under the lock it is stamped again only if
another append took a later time meanwhile (`restamp`: only the envelopes' time changes), so
`recorded_at` still never decreases.

The lock holder reads the log's tail (last position, time and chain hash: `TAIL`) in the
round trip that takes the lock, and keeps it up to date itself after each append; the
time-index row and the key row are handed back (`Appended.writes`) to be sent with the
COMMIT, in one round trip. Under the lock an append is then the chain hashes and the COPY.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final, NamedTuple

import msgspec
import psycopg

from apexmem.events.chain import GENESIS, links
from apexmem.events.chainrows import HASH_SIZE
from apexmem.events.envelope import AppendResult, NewEvent, encoded
from apexmem.events.postgres_copy import COLUMNS, Rows
from apexmem.events.postgres_reads import Tables
from apexmem.events.timeutil import from_micros, to_micros

__all__ = ["Appended", "Prepared", "Tail", "append_in", "prepare", "restamp", "tail_sql"]


class Prepared(NamedTuple):
    """One append's events checked and encoded at a transaction time (microseconds)."""

    micros: int
    tags: list[str]
    states: list[bytes]
    rows: Rows


class Tail(NamedTuple):
    """The log's last position (0: empty), the last append's time (None: none yet) and the
    chain hash at the last position (GENESIS: none yet)."""

    last: int
    micros: int | None
    chain: bytes


class Appended(NamedTuple):
    """What one append wrote, the log's tail after it, and the statements still to send
    before its transaction commits (the time-index row, the key)."""

    result: AppendResult
    tail: Tail
    writes: list[tuple[str, tuple[Any, ...]]]


def tail_sql(tables: Tables) -> str:
    """One row: the last position, the last append's time and its last chain hash."""
    return (
        f"SELECT (SELECT MAX(position) FROM {tables.events}), recorded_at, "
        f"substring(chain FROM octet_length(chain) - {HASH_SIZE - 1}) "
        f"FROM (SELECT NULL) AS one LEFT JOIN "
        f"(SELECT * FROM {tables.index} ORDER BY position DESC LIMIT 1) AS i ON true"
    )


def read_tail(row: Sequence[Any] | None) -> Tail:
    """The tail from `tail_sql`'s row."""
    last, micros, chain = row or (None, None, None)
    return Tail(last or 0, micros, GENESIS if chain is None else bytes(chain))


def prepare(events: Sequence[NewEvent], micros: int) -> Prepared:
    """Check and encode `events` as recorded at `micros`; raises ValidationError."""
    tags, states = encoded(events, from_micros(micros))
    rows = Rows([e.stream_id for e in events], [e.version for e in events], tags, states)
    return Prepared(micros, tags, states, rows)


_STAMP: Final = b'{"recorded_at":'
"""How every stored record starts: its envelope's time comes first (`codec.Stored`)."""


def restamp(prepared: Prepared, events: Sequence[NewEvent], micros: int) -> Prepared:
    """`prepare(events, micros)` from `prepared` (the same events encoded at another time):
    only each record's leading time changes, so the payloads are not encoded again."""
    old = _STAMP + msgspec.json.encode(from_micros(prepared.micros))
    new = _STAMP + msgspec.json.encode(from_micros(micros))
    cut = len(old)
    states = prepared.states
    if not all(state.startswith(old) for state in states):  # not as expected: the long way
        return prepare(events, micros)
    states = [new + state[cut:] for state in states]
    rows = Rows([e.stream_id for e in events], [e.version for e in events], prepared.tags, states)
    return Prepared(micros, prepared.tags, states, rows)


def append_in(
    connection: psycopg.Connection[Any],
    tables: Tables,
    events: Sequence[NewEvent],
    key: str | None,
    receipt: bytes | None,
    *,
    tail: Tail,
    clock: Callable[[], datetime],
    prepared: Prepared | None = None,
) -> Appended:
    """Append `events` (and `key`) after `tail` in the locked transaction on `connection`:
    the rows are copied now, the index and key rows are returned to be sent before COMMIT."""
    # Every append gets its own transaction time, even when the clock stalls or steps
    # back: "known at S" then tells any two appends apart.
    floor = 0 if tail.micros is None else tail.micros + 1
    if prepared is None:
        prepared = prepare(events, max(to_micros(clock()), floor))
    elif prepared.micros < floor:
        prepared = restamp(prepared, events, floor)
    micros = prepared.micros
    first = tail.last + 1
    positions = list(range(first, first + len(events)))
    writes: list[tuple[str, tuple[Any, ...]]] = []
    after = tail
    if events:
        hashes = links(
            tail.chain,
            zip(
                [e.stream_id.bytes for e in events],
                [e.version for e in events],
                prepared.tags,
                prepared.states,
                strict=True,
            ),
        )
        sql = f"COPY {tables.events} {COLUMNS} FROM STDIN (FORMAT BINARY)"
        with connection.cursor().copy(sql) as copy:
            copy.write(prepared.rows.data(first))
        writes.append(
            (
                f"INSERT INTO {tables.index} VALUES (%s, %s, %s)",
                (positions[-1], micros, b"".join(hashes)),
            )
        )
        after = Tail(positions[-1], micros, hashes[-1])
    if key is not None:
        ends = (positions[0], positions[-1]) if events else (None, None)
        sql = f"INSERT INTO {tables.keys} VALUES (%s, %s, %s, %s, %s)"
        writes.append((sql, (key, *ends, micros, receipt)))
    appended = AppendResult(positions=positions, recorded_at=from_micros(micros))
    return Appended(appended, after, writes)
