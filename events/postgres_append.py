"""One append to the PostgreSQL log, inside its locked transaction: the position, time and
chain hash after the last append's, then the rows, the time-index row and the key.

What needs no lock (checking and encoding the events, their COPY bytes) can be done first
(`prepare`), with the clock read before the lock; under the lock it is done again only if
another append took a later time meanwhile, so `recorded_at` still never decreases.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import psycopg

from apexmem.events.chain import GENESIS, links
from apexmem.events.chainrows import HASH_SIZE
from apexmem.events.envelope import AppendResult, NewEvent, encoded
from apexmem.events.postgres_copy import COLUMNS, Rows
from apexmem.events.postgres_reads import Tables
from apexmem.events.timeutil import from_micros, to_micros

__all__ = ["Prepared", "append_in", "prepare"]


class Prepared(NamedTuple):
    """One append's events checked and encoded at a transaction time (microseconds)."""

    micros: int
    tags: list[str]
    states: list[bytes]
    rows: Rows


def prepare(events: Sequence[NewEvent], micros: int) -> Prepared:
    """Check and encode `events` as recorded at `micros`; raises ValidationError."""
    tags, states = encoded(events, from_micros(micros))
    rows = Rows([e.stream_id for e in events], [e.version for e in events], tags, states)
    return Prepared(micros, tags, states, rows)


def append_in(
    connection: psycopg.Connection[Any],
    tables: Tables,
    events: Sequence[NewEvent],
    key: str | None,
    receipt: bytes | None,
    *,
    clock: Callable[[], datetime],
    prepared: Prepared | None = None,
) -> AppendResult:
    """Append `events` (and `key`) in the locked transaction on `connection`."""
    last, last_micros, chain = connection.execute(
        f"SELECT (SELECT MAX(position) FROM {tables.events}), recorded_at, "
        f"substring(chain FROM octet_length(chain) - {HASH_SIZE - 1}) "
        f"FROM (SELECT NULL) AS one LEFT JOIN "
        f"(SELECT * FROM {tables.index} ORDER BY position DESC LIMIT 1) AS i ON true"
    ).fetchone() or (None, None, None)
    # Every append gets its own transaction time, even when the clock stalls or steps
    # back: "known at S" then tells any two appends apart.
    floor = 0 if last_micros is None else last_micros + 1
    if prepared is None:
        prepared = prepare(events, max(to_micros(clock()), floor))
    elif prepared.micros < floor:
        prepared = prepare(events, floor)
    micros = prepared.micros
    hashes = links(
        GENESIS if chain is None else bytes(chain),
        zip(
            [e.stream_id.bytes for e in events],
            [e.version for e in events],
            prepared.tags,
            prepared.states,
            strict=True,
        ),
    )
    first = (last or 0) + 1
    positions = list(range(first, first + len(events)))
    if events:
        sql = f"COPY {tables.events} {COLUMNS} FROM STDIN (FORMAT BINARY)"
        with connection.cursor().copy(sql) as copy:
            copy.write(prepared.rows.data(first))
        connection.execute(
            f"INSERT INTO {tables.index} VALUES (%s, %s, %s)",
            (positions[-1], micros, b"".join(hashes)),
        )
    if key is not None:
        ends = (positions[0], positions[-1]) if events else (None, None)
        connection.execute(
            f"INSERT INTO {tables.keys} VALUES (%s, %s, %s, %s, %s)", (key, *ends, micros, receipt)
        )
    return AppendResult(positions=positions, recorded_at=from_micros(micros))
