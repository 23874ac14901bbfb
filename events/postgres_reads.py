"""The PostgreSQL log's tables and reads, shared by the log and its locked section.

Each read takes a `Query` (run on a connection outside a transaction, or inside the locked
section's) and the log's `Tables`. The records, keys and chain rows are those the SQLite
log stores (`events.log`), in PostgreSQL types: stream ids as `uuid`, payloads and chains as
`bytea`, times as microseconds.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import Any, Final
from uuid import UUID

from apexmem.events.chainrows import ChainLink, Query, covered, row_links
from apexmem.events.envelope import (
    AppendResult,
    KeyedAppend,
    RawRecord,
    RecordedEvent,
    parse_key,
    recorded,
)
from apexmem.events.erasure import Erased
from apexmem.events.located import location
from apexmem.events.logreads import raw_record
from apexmem.events.timeutil import from_micros

__all__ = [
    "LAYOUT",
    "Changes",
    "Tables",
    "chain_links",
    "chains",
    "changed_since",
    "find",
    "keyed_appends",
    "raw_records",
    "read",
    "read_streams",
    "repeated",
]

LAYOUT: Final = 1
"""The layout version of the log's tables (`events.postgres.claim_schema`)."""
_CHUNK: Final = 500
_SCAN_CHUNK: Final = 2_000
_COLUMNS: Final = "position, stream, version, tag, state"


class Tables:
    """The log's tables in one schema, and the statements that create them."""

    def __init__(self, schema: str) -> None:
        self.events = f"{schema}.log_events"
        self.index = f"{schema}.log_index"
        self.keys = f"{schema}.log_idempotency"

    # The positions are the events' own column, not a sequence: the append that takes them
    # holds the table lock (events.postgres_log), so they are gapless and in commit order.
    CREATE: Final = (
        "CREATE TABLE {schema}.log_events (position bigint PRIMARY KEY, stream uuid NOT NULL, "
        "version bigint NOT NULL, tag text NOT NULL, state bytea NOT NULL, "
        "UNIQUE (stream, version))",
        # One row per append at its last position: its time and its events' chain hashes.
        "CREATE TABLE {schema}.log_index (position bigint PRIMARY KEY, "
        "recorded_at bigint NOT NULL, chain bytea NOT NULL)",
        "CREATE INDEX ON {schema}.log_index (recorded_at)",
        # Keys in byte order ("C"), as SQLite orders them: keyed_appends lists them alike.
        'CREATE TABLE {schema}.log_idempotency (key text COLLATE "C" PRIMARY KEY, '
        "first_position bigint, "
        "last_position bigint, recorded_at bigint NOT NULL, receipt bytea)",
    )


def read(
    query: Query,
    tables: Tables,
    *,
    start: int,
    stop: int | None,
    tags: Sequence[str],
    limit: int | None,
) -> Iterator[RecordedEvent]:
    """Events in position order from `start` to `stop`, optionally by tag, at most `limit`."""
    where = "position >= %s" + ("" if stop is None else " AND position <= %s")
    if tags:
        where += " AND tag = ANY(%s)"
    sql = f"SELECT {_COLUMNS} FROM {tables.events} WHERE {where} ORDER BY position LIMIT %s"
    position, left = start, limit
    while left is None or left > 0:
        size = _SCAN_CHUNK if left is None else min(_SCAN_CHUNK, left)
        bounds = (position,) if stop is None else (position, stop)
        rows = query(sql, (*bounds, *([list(tags)] if tags else []), size))
        if not rows:
            return
        for row in rows:
            event = recorded(row[0], row[1], row[2], row[3], row[4])
            if not (tags and type(event.data) is Erased):  # blanked: not of its tag's kind
                yield event
        position = rows[-1][0] + 1
        if left is not None:
            left -= len(rows)


def read_streams(
    query: Query, tables: Tables, stream_ids: Sequence[UUID], after_version: int
) -> dict[UUID, list[RecordedEvent]]:
    """Events of many streams, keyed by stream, each oldest first."""
    found: dict[UUID, list[RecordedEvent]] = {}
    unique = list(dict.fromkeys(stream_ids))
    for i in range(0, len(unique), _CHUNK):
        rows = query(_streams_sql(tables), (unique[i : i + _CHUNK], after_version))
        for row in rows:
            found.setdefault(row[1], []).append(recorded(row[0], row[1], row[2], row[3], row[4]))
    return found


def _streams_sql(tables: Tables) -> str:
    """Each stream's events by its (stream, version) index, one stream after another (the
    subquery is kept apart by OFFSET 0): `stream = ANY(...)` was planned as a scan of the
    whole table while the log had no statistics yet (a log written faster than autovacuum
    analyzes it), 50-70 ms for 500 streams of 30,000 events instead of 4."""
    return (
        f"SELECT e.{_COLUMNS.replace(', ', ', e.')} FROM unnest(%s::uuid[]) WITH ORDINALITY "
        f"AS s(id, n) CROSS JOIN LATERAL (SELECT {_COLUMNS} FROM {tables.events} "
        "WHERE stream = s.id AND version > %s OFFSET 0) AS e ORDER BY s.n, e.version"
    )


def find(query: Query, tables: Tables, key: str) -> RecordedEvent | None:
    """The event a key names, by its located id's (stream, version)."""
    lookup = parse_key(key)
    if lookup is None:
        return None
    low, high, version = location(lookup.located)
    rows = query(
        f"SELECT {_COLUMNS} FROM {tables.events} WHERE stream BETWEEN %s AND %s AND version = %s",
        (low, high, version),
    )
    for row in rows:  # one, but for two streams sharing 12 bytes
        event = recorded(row[0], row[1], row[2], row[3], row[4])
        if lookup.matches(event.data):
            return event
    return None


def repeated(query: Query, tables: Tables, key: str) -> AppendResult | None:
    """The first append made with an idempotency key, if any."""
    rows = query(
        f"SELECT first_position, last_position, recorded_at, receipt FROM {tables.keys} "
        "WHERE key = %s",
        (key,),
    )
    if not rows:
        return None
    first, last, micros, receipt = rows[0]
    positions = [] if first is None else list(range(first, last + 1))
    return AppendResult(
        positions=positions, recorded_at=from_micros(micros), repeated=True, receipt=receipt
    )


def changed_since(query: Query, tables: Tables, position: int) -> tuple[list[UUID], list[str]]:
    """The streams appended to after `position`, and the tags appended (payloads unread)."""
    [(_, streams, tags)] = query(_changes_sql(tables), (position,))
    return list(dict.fromkeys(streams or ())), sorted(set(tags or ()))


def _changes_sql(tables: Tables) -> str:
    # One row of three arrays, element by element the same rows: a writer of many asks for
    # thousands of events, and three arrays (read in binary, as every read of the log is)
    # took half the time of a row per event on both sides. In the order the server found
    # them (position order but for records an erasure rewrote): sorted by the reader.
    return (
        "SELECT array_agg(position), array_agg(stream), array_agg(tag) "
        f"FROM {tables.events} WHERE position > %s"
    )


class Changes:
    """`changed_since` answered from the rows it read before, reading only those appended
    since: a writer among many asks before deciding a batch and again under the write lock
    (is what it read still so?), and each row appended by the others is then read once,
    most of them before the lock (`refresh`) instead of under it.

    Holds committed rows only: a locked section that appended asks the log itself. Rows
    before the last position asked are dropped; an earlier position reads them again.
    """

    _LIMIT: Final = 100_000
    """Rows held at most (a position far back is answered, then not kept)."""

    def __init__(self, tables: Tables) -> None:
        self._sql = _changes_sql(tables)
        self._lock = threading.Lock()
        self._after: int | None = None  # rows held: those after this position...
        self._upto = 0  # ...up to this one, the last read
        self._positions: list[int] = []
        self._streams: list[UUID] = []
        self._tags: list[str] = []
        self.asked = False
        """Whether changed_since was asked since the last `refresh`, and read rows."""

    def since(self, query: Query, position: int) -> tuple[list[UUID], list[str]]:
        """The streams appended to after `position`, and the tags appended."""
        with self._lock:
            if self._after is None or not self._after <= position <= self._upto:
                # Nothing held from there (those held end before it: none of them is asked)
                self._after, self._upto = position, position
                self._positions, self._streams, self._tags = [], [], []
            # Another writer appends meanwhile: read what it appended before the next lock.
            self.asked = self._read(query) > 0
            i = bisect_right(self._positions, position)
            del self._positions[:i], self._streams[:i], self._tags[:i]
            self._after = position
            found = list(dict.fromkeys(self._streams)), sorted(set(self._tags))
            if len(self._positions) > self._LIMIT:
                self._after = None
                self._positions, self._streams, self._tags = [], [], []
            return found

    def refresh(self, query: Query) -> None:
        """Read the rows appended since the last read, if changed_since was asked since the
        last refresh and found some (outside the write lock: what is left for under it is
        then little)."""
        with self._lock:
            if self.asked and self._after is not None:
                self.asked = False
                self._read(query)

    def _read(self, query: Query) -> int:
        """Read the rows after the last one read; how many there were."""
        [(positions, streams, tags)] = query(self._sql, (self._upto,))
        if positions and sorted(positions) != positions:
            order = sorted(range(len(positions)), key=positions.__getitem__)
            positions = [positions[i] for i in order]
            streams, tags = [streams[i] for i in order], [tags[i] for i in order]
        if positions:
            self._positions += positions
            self._streams += streams
            self._tags += tags
            self._upto = positions[-1]
        return len(positions or ())


def chains(query: Query, tables: Tables, positions: Sequence[int]) -> dict[int, bytes]:
    """The chain hash stored for each of these positions."""

    def row_from(position: int) -> tuple[int, bytes] | None:
        rows = query(
            f"SELECT position, chain FROM {tables.index} WHERE position >= %s "
            "ORDER BY position LIMIT 1",
            (position,),
        )
        return (rows[0][0], bytes(rows[0][1])) if rows else None

    return covered(positions, row_from)


def chain_links(query: Query, tables: Tables, start: int, stop: int) -> Iterator[ChainLink]:
    """Every position's chain link from `start` to `stop`, in position order."""

    def rows() -> Iterator[tuple[int, int, bytes]]:
        after = start - 1
        while page := query(
            f"SELECT position, recorded_at, chain FROM {tables.index} "
            "WHERE position > %s AND position <= %s ORDER BY position LIMIT %s",
            (after, stop, _CHUNK),
        ):
            yield from page
            after = page[-1][0]

    return row_links(rows(), start)


def raw_records(query: Query, tables: Tables, start: int) -> Iterator[RawRecord]:
    """Every position that has a record or a chain hash, with both as stored.

    Reads up to the last position written when it starts: positions up to there never
    change, so records and chain rows read by separate statements agree while others append.
    """
    [(stop,)] = query(
        f"SELECT GREATEST((SELECT MAX(position) FROM {tables.events}), "
        f"(SELECT MAX(position) FROM {tables.index}), 0)",
        (),
    )
    records = _stored_rows(query, tables, start, stop)
    links = chain_links(query, tables, start, stop)
    record, link = next(records, None), next(links, None)
    while record is not None or link is not None:
        at_record = record is not None and (link is None or record[0] <= link.position)
        at_link = link is not None and (record is None or link.position <= record[0])
        yield raw_record(record if at_record else None, link if at_link else None)
        if at_record:
            record = next(records, None)
        if at_link:
            link = next(links, None)


def keyed_appends(query: Query, tables: Tables) -> Iterator[KeyedAppend]:
    """Every idempotency key as stored, in key order (read in chunks)."""
    after: str | None = None
    while rows := query(
        f"SELECT key, first_position, last_position, recorded_at FROM {tables.keys} "
        "WHERE %s::text IS NULL OR key > %s ORDER BY key LIMIT %s",
        (after, after, _CHUNK),
    ):
        for key, first, last, micros in rows:
            yield KeyedAppend(str(key), first, last, int(micros))
        after = str(rows[-1][0])


def _stored_rows(query: Query, tables: Tables, start: int, stop: int) -> Iterator[Any]:
    """The events' rows from `start` to `stop`, stream ids as hex, in position order."""
    sql = (
        f"SELECT position, stream, version, tag, state FROM {tables.events} "
        "WHERE position >= %s AND position <= %s ORDER BY position LIMIT %s"
    )
    position = start
    while rows := query(sql, (position, stop, _CHUNK)):
        for row in rows:
            yield (row[0], row[1].hex, *row[2:])
        position = rows[-1][0] + 1
