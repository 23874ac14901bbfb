"""The SQLite log's reads, shared by the log and its locked section: each takes a query."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final
from uuid import UUID

import msgspec

from apexmem.events.chainrows import ChainLink, Query
from apexmem.events.envelope import AppendResult, RawRecord, RecordedEvent, parse_key, recorded
from apexmem.events.erasure import Erased
from apexmem.events.located import location
from apexmem.events.sqlite import EVENTS_TABLE
from apexmem.events.storedids import StoredIds, parse_stream, stream_text
from apexmem.events.timeutil import from_micros

__all__ = [
    "READ_CHUNK",
    "changed_since",
    "cursor_query",
    "find",
    "raw_record",
    "read",
    "read_streams",
    "repeated",
]

READ_CHUNK: Final = 500
_SCAN_CHUNK: Final = 2_000
"""Events per query when reading the log in position order (a projection batch, by default)."""


def read_streams(
    query: Query, stored: StoredIds, stream_ids: Sequence[UUID], after_version: int
) -> dict[UUID, list[RecordedEvent]]:
    """Events of many streams, keyed by stream, each oldest first."""
    found: dict[UUID, list[RecordedEvent]] = {}
    unique = list(dict.fromkeys(stream_ids))
    for i in range(0, len(unique), READ_CHUNK):
        chunk = unique[i : i + READ_CHUNK]
        ids = stored.streams(chunk)
        marks = ",".join("?" * len(ids))
        rows = query(
            f"SELECT rowid, originator_id, originator_version, topic, state "
            f"FROM {EVENTS_TABLE} WHERE originator_id IN ({marks}) AND originator_version>? "
            f"ORDER BY originator_id, originator_version",
            (*ids, after_version),
        )
        # Rows come grouped by stream, as stored: no UUID is parsed or hashed per row.
        streams = dict(zip(ids, chunk, strict=True))
        events: list[RecordedEvent] = []
        current: object = None
        stream: Any = None
        for row in rows:
            if row[1] != current:
                current, stream = row[1], streams[row[1]]
                events = found[stream] = []
            events.append(recorded(row[0], stream, row[2], row[3], row[4]))
    return found


def find(query: Query, stored: StoredIds, key: str) -> RecordedEvent | None:
    """The event a key names: by its located id's (stream, version), else (in a log
    written before located ids) through the key table."""
    lookup = parse_key(key)
    if lookup is None:
        return None
    low, high, version = location(lookup.located)
    rows = query(
        f"SELECT rowid, originator_id, originator_version, topic, state FROM {EVENTS_TABLE} "
        "WHERE originator_id BETWEEN ? AND ? AND originator_version=?",
        (*stored.streams([low, high]), version),
    )
    for row in rows:  # one, but for two streams sharing 12 bytes
        record = _record(row)
        if lookup.matches(record.data):
            return record
    value = stored.key(key)
    if value is None:  # not a key this log can hold, so not one it holds
        return None
    rows = query(
        f"SELECT e.rowid, e.originator_id, e.originator_version, e.topic, e.state "
        f"FROM event_keys k JOIN {EVENTS_TABLE} e ON e.rowid = k.position WHERE k.key=?",
        (value,),
    )
    return _record(rows[0]) if rows else None


def repeated(query: Query, key: str) -> AppendResult | None:
    """The first append made with an idempotency key, if any."""
    rows = query(
        "SELECT first_position, last_position, recorded_at, receipt FROM idempotency WHERE key=?",
        (key,),
    )
    if not rows:
        return None
    first, last, micros, receipt = rows[0]
    positions = (
        []
        if first is None
        else [
            r[0]
            for r in query(
                f"SELECT rowid FROM {EVENTS_TABLE} WHERE rowid BETWEEN ? AND ? ORDER BY rowid",
                (first, last),
            )
        ]
    )
    return AppendResult(
        positions=positions, recorded_at=from_micros(micros), repeated=True, receipt=receipt
    )


def read(
    query: Query, *, start: int, stop: int | None, tags: Sequence[str], limit: int | None
) -> Iterator[RecordedEvent]:
    """Events in position order from `start` to `stop`, optionally by tag, at most `limit`."""
    where = "rowid>=?" if stop is None else "rowid>=? AND rowid<=?"
    if tags:
        where += f" AND topic IN ({','.join('?' * len(tags))})"
    sql = (
        f"SELECT rowid, originator_id, originator_version, topic, state "
        f"FROM {EVENTS_TABLE} WHERE {where} ORDER BY rowid LIMIT ?"
    )
    position, left = start, limit
    while left is None or left > 0:
        size = _SCAN_CHUNK if left is None else min(_SCAN_CHUNK, left)
        bounds = (position,) if stop is None else (position, stop)
        rows = query(sql, (*bounds, *tags, size))
        if not rows:
            return
        # msgspec parses the stream ids in one call, several times faster than UUID().
        streams = msgspec.convert([row[1] for row in rows], list[UUID])
        for row, stream in zip(rows, streams, strict=True):
            event = recorded(row[0], stream, row[2], row[3], row[4])
            # A blanked record keeps its tag but is no longer an event of that kind: a
            # read by tag wants what the tag's class holds (events.erasure).
            if not (tags and type(event.data) is Erased):
                yield event
        position = rows[-1][0] + 1
        if left is not None:
            left -= len(rows)


def changed_since(query: Query, position: int) -> tuple[list[UUID], list[str]]:
    """The streams appended to after `position`, and the tags appended (payloads unread).

    Deduplicated here, not by SELECT DISTINCT: SQLite answers DISTINCT by scanning the whole
    (stream, version) index, a cost growing with the log, where the rowid range reads only
    the rows appended since.
    """
    rows = query(f"SELECT originator_id, topic FROM {EVENTS_TABLE} WHERE rowid > ?", (position,))
    return list({parse_stream(r[0]): None for r in rows}), sorted({r[1] for r in rows})


def cursor_query(cursor: Any) -> Query:
    """A query running on `cursor` (inside its transaction)."""

    def query(sql: str, params: Sequence[Any] = ()) -> list[Any]:
        cursor.execute(sql, params)
        return list(cursor.fetchall())

    return query


def raw_record(record: tuple[Any, ...] | None, link: ChainLink | None) -> RawRecord:
    """One position's stored record (position, stream, version, tag, state) and chain link."""
    position = record[0] if record is not None else link.position if link is not None else 0
    stream, version, tag, state = record[1:] if record is not None else (None,) * 4
    return RawRecord(
        position,
        stream_text(stream),
        version,
        tag,
        state,
        link.recorded_at if link is not None else None,
        link.chain if link is not None else None,
        link.problem if link is not None else None,
    )


def _record(row: Sequence[Any]) -> RecordedEvent:
    return recorded(row[0], parse_stream(row[1]), row[2], row[3], row[4])
