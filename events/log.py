"""The append-only event log: atomic batches, global positions, time index, chain, keys."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path
from typing import Any, Final, Protocol
from uuid import UUID

import msgspec

from apexmem.events.base import MAX_KEY_BYTES, MAX_REF_BYTES, Event
from apexmem.events.catalogue import tag_of
from apexmem.events.chain import GENESIS, links
from apexmem.events.chainrows import (
    ChainLink,
    Query,
    chain_links,
    chains,
    copy_rows,
    insert_row,
    last_row,
)
from apexmem.events.checkpoint import Checkpointer
from apexmem.events.codec import Stored, decode, encode
from apexmem.events.episode import MessageRecorded
from apexmem.events.errors import (
    ApexmemError,
    ConcurrencyError,
    IntegrityViolation,
    ValidationError,
)
from apexmem.events.fact import FactAsserted
from apexmem.events.located import locates, location
from apexmem.events.sqlite import (
    EVENTS_TABLE,
    Datastore,
    Recorder,
    Row,
    Synchronous,
    blobs,
    is_damaged,
)
from apexmem.events.storedids import BINARY, IdFormat, StoredIds, parse_stream, stream_text
from apexmem.events.timeutil import from_micros, to_micros

__all__ = [
    "AppendResult",
    "EventLog",
    "LockedLog",
    "LogAccess",
    "NewEvent",
    "RawRecord",
    "RecordedEvent",
    "lookup_key",
]

_READ_CHUNK: Final = 500
_SCAN_CHUNK: Final = 2_000
"""Events per query when reading the log in position order (a projection batch, by default)."""
Clock = Callable[[], datetime]


# gc=False: made by the thousand per batch and never part of a reference cycle.
class NewEvent(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An event to append at `version` of `stream_id`, with its provenance."""

    stream_id: UUID
    version: int
    data: Event
    actor: str | None = None
    episode: str | None = None
    cause: str | None = None


# gc=False: read by the thousand (a projection batch) and never part of a reference cycle,
# so the cyclic garbage collector need not track it.
class RecordedEvent(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An event as the log holds it: its position, stream, version, envelope and payload."""

    position: int
    stream_id: UUID
    version: int
    tag: str
    recorded_at: datetime
    actor: str | None
    episode: str | None
    cause: str | None
    data: Any


class RawRecord(msgspec.Struct, frozen=True):
    """One position as stored, for verification: the record (if any) and its chain hash (if
    any), or why the chain row covering it is unusable (`problem`)."""

    position: int
    stream_id: str | None
    version: int | None
    tag: str | None
    state: bytes | None
    recorded_at: int | None
    chain: bytes | None
    problem: str | None = None


class AppendResult(msgspec.Struct, frozen=True, kw_only=True):
    """Positions written by one append (or by the first append with the same idempotency key)."""

    positions: list[int]
    recorded_at: datetime | None
    repeated: bool = False
    receipt: bytes | None = None
    """What the caller stored with the idempotency key (for example, its encoded results)."""


_FOUND_BY: Final[dict[str, tuple[type, str]]] = {
    "fact": (FactAsserted, "fact_id"),
    "message": (MessageRecorded, "message_id"),
}
"""The events `find` finds by a located id (`events.located`): each key prefix's class and
the id's field."""
_LOCATED: Final[dict[type, tuple[str, str, Callable[[Any], UUID]]]] = {
    cls: (prefix, field, attrgetter(field)) for prefix, (cls, field) in _FOUND_BY.items()
}
"""The same by class: key prefix, id field and a getter of the id."""


def lookup_key(data: Event) -> str | None:
    """The key under which `find` finds an event again by its id (facts and messages)."""
    located = _LOCATED.get(type(data))
    return None if located is None else f"{located[0]}:{located[2](data)}"


class LogAccess(Protocol):
    """What the write path needs of a log: reads by stream and key, and an atomic append."""

    def read_streams(
        self, stream_ids: Sequence[UUID], *, after_version: int = 0
    ) -> dict[UUID, list[RecordedEvent]]: ...

    def read_stream(self, stream_id: UUID, *, after_version: int = 0) -> list[RecordedEvent]: ...

    def find(self, key: str) -> RecordedEvent | None: ...

    def repeated(self, idempotency_key: str) -> AppendResult | None: ...

    def changed_since(self, position: int) -> tuple[list[UUID], list[str]]: ...

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        idempotency_key: str | None = None,
        receipt: bytes | None = None,
    ) -> AppendResult: ...


class EventLog:
    """The one ordered, hash-chained, append-only log of a memory (a SQLite file)."""

    def __init__(
        self,
        path: Path | str,
        *,
        synchronous: Synchronous = "NORMAL",
        clock: Clock | None = None,
        ids: IdFormat = BINARY,
    ) -> None:
        """Open (or create) the log at `path`.

        `ids` is how a new file stores stream ids and lookup keys (see
        `apexmem.events.storedids`); an existing file keeps the format it was made with.
        """
        self.path = Path(path)
        self._clock: Clock = clock or (lambda: datetime.now(UTC))
        self._datastore = Datastore(str(self.path), synchronous=synchronous)
        self._recorder = Recorder(self._datastore, ids=ids)
        try:
            self._recorder.create_table()
        except Exception as e:
            self._datastore.close()
            if is_damaged(e):
                raise IntegrityViolation(
                    f"{self.path} is damaged and cannot be read ({e}); restore it from a copy"
                ) from e
            raise
        self.ids: StoredIds = self._recorder.ids
        """How this file stores stream ids and lookup keys."""
        self._checkpointer = Checkpointer(str(self.path), synchronous=synchronous)

    def close(self) -> None:
        """Close every connection; the log file stays."""
        self._checkpointer.close()
        self._datastore.close()

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        idempotency_key: str | None = None,
        receipt: bytes | None = None,
    ) -> AppendResult:
        """Append all events atomically; a reused idempotency key writes nothing.

        A reused key returns the first append's positions and `receipt`. Raises
        ConcurrencyError when a (stream, version) is already taken.
        """
        with self.locked() as locked:
            return locked.append(events, idempotency_key=idempotency_key, receipt=receipt)

    def _append_in(
        self, cursor: Any, events: Sequence[NewEvent], key: str | None, receipt: bytes | None
    ) -> AppendResult:
        if key is not None:
            _check_key(key)
            repeated = _repeated(_cursor_query(cursor), key)
            if repeated is not None:
                return repeated
        last = last_row(cursor)
        last_micros, chain = last if last is not None else (-1, GENESIS)
        # Every append gets its own transaction time, even when the clock stalls or steps
        # back: "known at S" then tells any two appends apart.
        micros = max(to_micros(self._clock()), last_micros + 1)
        recorded_at = from_micros(micros)
        rows, hashes = _records(self.ids, events, recorded_at, chain)
        positions = self._recorder.insert_rows(cursor, rows)
        if positions:
            insert_row(cursor, positions[-1], micros, hashes)
        if key is not None:
            cursor.execute(
                "INSERT INTO idempotency VALUES (?,?,?,?,?)",
                (
                    key,
                    positions[0] if positions else None,
                    positions[-1] if positions else None,
                    micros,
                    receipt,
                ),
            )
        return AppendResult(positions=positions, recorded_at=recorded_at)

    @contextmanager
    def locked(self) -> Iterator[LockedLog]:
        """Hold the write lock: reads see the latest log and one append cannot conflict.

        The write path uses this to retry after a ConcurrencyError, so a writer racing
        others on a hot stream always makes progress. Commits on exit.
        """
        with self._datastore.get_connection(commit=True) as connection:
            cursor = connection.cursor()
            _execute(cursor, "BEGIN IMMEDIATE")
            locked = LockedLog(self, cursor)
            try:
                yield locked
                connection.commit()
            except sqlite3.IntegrityError as e:
                connection.rollback()
                raise ConcurrencyError(  # SQLite's text (the constraint) stays in the cause
                    "a stream changed while this append was decided: another writer appended "
                    "to it first (read it again, decide again, append again)"
                ) from e
            except BaseException:
                connection.rollback()
                raise
        self._checkpointer.committed(locked.appended)  # after the commit, outside its errors

    def read(
        self,
        *,
        start: int = 1,
        stop: int | None = None,
        tags: Sequence[str] = (),
        limit: int | None = None,
    ) -> Iterator[RecordedEvent]:
        """Events in position order from `start` to `stop` (inclusive), optionally by tag.

        `limit` caps how many are read (and decoded) in all.
        """
        return _read(self._query, start=start, stop=stop, tags=tags, limit=limit)

    def read_stream(self, stream_id: UUID, *, after_version: int = 0) -> list[RecordedEvent]:
        """Every event of one stream after `after_version`, oldest first."""
        return self.read_streams([stream_id], after_version=after_version).get(stream_id, [])

    def read_streams(
        self, stream_ids: Sequence[UUID], *, after_version: int = 0
    ) -> dict[UUID, list[RecordedEvent]]:
        """Events of many streams at once, keyed by stream, each oldest first."""
        return _read_streams(self._query, self.ids, stream_ids, after_version)

    def find(self, key: str) -> RecordedEvent | None:
        """The event stored under a lookup key (`fact:<id>`, `message:<id>`), if any."""
        return _find(self._query, self.ids, key)

    def repeated(self, idempotency_key: str) -> AppendResult | None:
        """The first append made with this idempotency key, if there was one."""
        return _repeated(self._query, idempotency_key)

    def changed_since(self, position: int) -> tuple[list[UUID], list[str]]:
        """The streams appended to after `position`, and the tags appended (payloads unread)."""
        return _changed_since(self._query, position)

    def chains(self, positions: Sequence[int]) -> dict[int, bytes]:
        """The chain hash stored at each of these positions."""
        return chains(self._query, positions)

    def last_position(self) -> int:
        """The highest position written so far (0 for an empty log)."""
        return int(self._recorder.max_notification_id() or 0)

    def last_recorded_at(self) -> datetime | None:
        """The transaction time of the latest append (None for an empty log)."""
        rows = self._query("SELECT MAX(recorded_at) FROM log_index")
        return None if rows[0][0] is None else from_micros(rows[0][0])

    def count(self) -> int:
        """How many events the log holds (positions may have gaps)."""
        return int(self._query(f"SELECT COUNT(*) FROM {EVENTS_TABLE}")[0][0])

    def position_at(self, when: datetime) -> int:
        """The last position recorded at or before `when` (0 if none): the log as known then."""
        rows = self._query(
            "SELECT MAX(position) FROM log_index WHERE recorded_at <= ?", (to_micros(when),)
        )
        return int(rows[0][0] or 0)

    def copy_to(self, path: Path | str, *, until: int) -> int:
        """Copy the log up to position `until` into a new log file; returns the events copied.

        Rows are copied as stored (payloads, chain hashes, lookup and idempotency keys), so
        the copy verifies and answers history exactly as this log did at `until`.
        """
        target = Path(path)
        if target.exists():
            raise ApexmemError(f"{target} already exists; a log copy never overwrites")
        EventLog(target, ids=self.ids.name).close()  # the copy keeps this file's format
        connection = sqlite3.connect(target, isolation_level=None)
        try:
            connection.execute("ATTACH DATABASE ? AS source", (str(self.path),))
            connection.execute("BEGIN IMMEDIATE")
            copied = connection.execute(
                f"INSERT INTO {EVENTS_TABLE} SELECT * FROM source.{EVENTS_TABLE} WHERE rowid <= ?",
                (until,),
            ).rowcount
            copy_rows(connection.execute, until)
            connection.execute(
                "INSERT INTO event_keys SELECT * FROM source.event_keys WHERE position <= ?",
                (until,),
            )
            connection.execute(
                "INSERT INTO idempotency SELECT * FROM source.idempotency "
                "WHERE COALESCE(last_position, 0) <= ? AND recorded_at <= "
                "(SELECT COALESCE(MAX(recorded_at), 0) FROM source.log_index WHERE position <= ?)",
                (until, until),
            )
            connection.execute("COMMIT")
        finally:
            connection.close()
        return int(copied)

    def raw_records(self, *, start: int = 1) -> Iterator[RawRecord]:
        """Every position that has a record or a chain hash, with both as stored.

        Reads up to the last position written when it starts: positions up to there never
        change, so records and chain rows read by separate statements agree even while
        other writers append.
        """
        [(stop,)] = self._query(
            f"SELECT MAX(COALESCE((SELECT MAX(rowid) FROM {EVENTS_TABLE}), 0), "
            "COALESCE((SELECT MAX(position) FROM log_index), 0))"
        )
        records = self._stored_rows(start, stop)
        links = chain_links(self._query, start, stop)
        record, link = next(records, None), next(links, None)
        while record is not None or link is not None:
            at_record = record is not None and (link is None or record[0] <= link.position)
            at_link = link is not None and (record is None or link.position <= record[0])
            yield _raw(record if at_record else None, link if at_link else None)
            if at_record:
                record = next(records, None)
            if at_link:
                link = next(links, None)

    def _stored_rows(self, start: int, stop: int) -> Iterator[tuple[Any, ...]]:
        """The events table's rows from `start` to `stop`, as stored, in position order."""
        sql = (
            f"SELECT rowid, originator_id, originator_version, topic, state FROM {EVENTS_TABLE} "
            "WHERE rowid >= ? AND rowid <= ? ORDER BY rowid LIMIT ?"
        )
        position = start
        while rows := self._query(sql, (position, stop, _READ_CHUNK)):
            yield from rows
            position = rows[-1][0] + 1

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        # One statement is its own read transaction in autocommit mode: no BEGIN needed.
        with self._datastore.get_connection(commit=False) as connection:
            cursor = connection.cursor()
            cursor.execute(sql, params)
            return list(cursor.fetchall())


def _read_streams(
    query: Query, stored: StoredIds, stream_ids: Sequence[UUID], after_version: int
) -> dict[UUID, list[RecordedEvent]]:
    found: dict[UUID, list[RecordedEvent]] = {}
    unique = list(dict.fromkeys(stream_ids))
    for i in range(0, len(unique), _READ_CHUNK):
        chunk = unique[i : i + _READ_CHUNK]
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
        stream = None
        for row in rows:
            if row[1] != current:
                current, stream = row[1], streams[row[1]]
                events = found[stream] = []
            events.append(_record(row[0], stream, row[2], row[3], row[4]))
    return found


def _find(query: Query, stored: StoredIds, key: str) -> RecordedEvent | None:
    """The event a key names: by its located id's (stream, version), else (in a log
    written before located ids) through the key table."""
    prefix, _, rest = key.partition(":")
    wanted = _FOUND_BY.get(prefix)
    if wanted is None:
        return None
    cls, field = wanted
    try:
        located = UUID(rest)
    except ValueError:
        return None
    low, high, version = location(located)
    rows = query(
        f"SELECT rowid, originator_id, originator_version, topic, state FROM {EVENTS_TABLE} "
        "WHERE originator_id BETWEEN ? AND ? AND originator_version=?",
        (*stored.streams([low, high]), version),
    )
    for row in rows:  # one, but for two streams sharing 12 bytes
        record = _record(*row)
        if isinstance(record.data, cls) and getattr(record.data, field) == located:
            return record
    value = stored.key(key)
    if value is None:  # not a key this log can hold, so not one it holds
        return None
    rows = query(
        f"SELECT e.rowid, e.originator_id, e.originator_version, e.topic, e.state "
        f"FROM event_keys k JOIN {EVENTS_TABLE} e ON e.rowid = k.position WHERE k.key=?",
        (value,),
    )
    return _record(*rows[0]) if rows else None


def _check_key(key: object) -> None:
    """An idempotency key is stored with the append and in every event's envelope (`cause`),
    which decodes as a string: anything else would be written and then fail every read."""
    if not isinstance(key, str) or not key:
        raise ValidationError("idempotency_key", key, "is not a non-empty string")
    if len(key) * 4 > MAX_KEY_BYTES and len(key.encode()) > MAX_KEY_BYTES:
        raise ValidationError(
            "idempotency_key", key[:57] + "...", f"is longer than {MAX_KEY_BYTES} bytes"
        )


def _repeated(query: Query, key: str) -> AppendResult | None:
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


def _read(
    query: Query, *, start: int, stop: int | None, tags: Sequence[str], limit: int | None
) -> Iterator[RecordedEvent]:
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
            yield _record(row[0], stream, row[2], row[3], row[4])
        position = rows[-1][0] + 1
        if left is not None:
            left -= len(rows)


def _changed_since(query: Query, position: int) -> tuple[list[UUID], list[str]]:
    rows = query(
        f"SELECT DISTINCT originator_id, topic FROM {EVENTS_TABLE} WHERE rowid > ?", (position,)
    )
    return list({parse_stream(r[0]): None for r in rows}), sorted({r[1] for r in rows})


def _cursor_query(cursor: Any) -> Query:
    def query(sql: str, params: Sequence[Any] = ()) -> list[Any]:
        cursor.execute(sql, params)
        return list(cursor.fetchall())

    return query


class LockedLog:
    """The log under its write lock (see EventLog.locked); one append per lock."""

    def __init__(self, log: EventLog, cursor: Any) -> None:
        self._log = log
        self.ids = log.ids
        self._cursor = cursor
        self._query = _cursor_query(cursor)
        self.appended = 0
        """Events appended under this lock (committed when it is released)."""

    def read_streams(
        self, stream_ids: Sequence[UUID], *, after_version: int = 0
    ) -> dict[UUID, list[RecordedEvent]]:
        """Events of many streams, read inside the lock."""
        return _read_streams(self._query, self.ids, stream_ids, after_version)

    def read_stream(self, stream_id: UUID, *, after_version: int = 0) -> list[RecordedEvent]:
        """Events of one stream, read inside the lock."""
        return self.read_streams([stream_id], after_version=after_version).get(stream_id, [])

    def find(self, key: str) -> RecordedEvent | None:
        """The event stored under a lookup key, read inside the lock."""
        return _find(self._query, self.ids, key)

    def repeated(self, idempotency_key: str) -> AppendResult | None:
        """The first append made with this idempotency key, read inside the lock."""
        return _repeated(self._query, idempotency_key)

    def last_position(self) -> int:
        """The highest position written so far, read inside the lock (0 for an empty log)."""
        return int(self._query(f"SELECT MAX(rowid) FROM {EVENTS_TABLE}", ())[0][0] or 0)

    def changed_since(self, position: int) -> tuple[list[UUID], list[str]]:
        """The streams appended to after `position`, and the tags appended, inside the lock."""
        return _changed_since(self._query, position)

    def read_after(self, position: int) -> Iterator[RecordedEvent]:
        """The events appended after `position`, in order, read inside the lock."""
        return _read(self._query, start=position + 1, stop=None, tags=(), limit=None)

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        idempotency_key: str | None = None,
        receipt: bytes | None = None,
    ) -> AppendResult:
        """Append inside the lock; committed when the lock is released."""
        appended = self._log._append_in(self._cursor, events, idempotency_key, receipt)
        if not appended.repeated:
            self.appended += len(appended.positions)
        return appended


def _record(position: int, stream: Any, version: int, tag: str, state: bytes) -> RecordedEvent:
    stored = decode(tag, state)
    return RecordedEvent(
        position=position,
        stream_id=parse_stream(stream),
        version=version,
        tag=tag,
        recorded_at=stored.recorded_at,
        actor=stored.actor,
        episode=stored.episode,
        cause=stored.cause,
        data=stored.data,
    )


def _records(
    ids: StoredIds, events: Sequence[NewEvent], recorded_at: datetime, chain: bytes
) -> tuple[list[Row], list[bytes]]:
    """The rows of one append and the chain hash of each.

    The rows are what TaggedMapper.to_stored_event makes, without its objects. Raises
    ValidationError, before anything is written, for a fact or message whose id is not
    located where it is appended (`find` could not find it).
    """
    streams = ids.streams([e.stream_id for e in events])
    versions = [e.version for e in events]
    tags: list[str] = []
    states: list[bytes] = []
    located_classes = _LOCATED
    for i, e in enumerate(events):
        data = e.data
        actor, episode, cause = e.actor, e.episode, e.cause
        # Four bytes a character at most: a short string is within the limit unencoded.
        if (actor is not None and (type(actor) is not str or len(actor) > _SHORT_REF)) or (
            episode is not None and (type(episode) is not str or len(episode) > _SHORT_REF)
        ):
            _check_refs(i, actor, episode)
        if cause is not None and type(cause) is not str:
            raise ValidationError(f"[{i}].cause", cause, "is not a string")
        tags.append(tag_of(data))
        states.append(
            encode(
                Stored(
                    recorded_at=recorded_at,
                    actor=e.actor,
                    episode=e.episode,
                    cause=e.cause,
                    data=data,
                )
            )
        )
        located = located_classes.get(type(data))
        if located is not None and not locates(located[2](data), e.stream_id, e.version):
            raise ValidationError(
                f"[{i}].data.{located[1]}",
                str(located[2](data)),
                f"is not the located id of version {e.version} of stream {e.stream_id} (its "
                "first 12 bytes are the stream's, its last 4 the version: apexmem.events.located)",
            )
    # The chain hashes each stream id's 16 bytes, which a binary log stores as they are.
    raw = streams if ids.binary else [e.stream_id.int.to_bytes(16) for e in events]
    hashes = links(chain, zip(raw, versions, tags, states, strict=True))
    bound = blobs(streams) if ids.binary else streams
    return list(zip(bound, versions, tags, blobs(states), strict=True)), hashes


_SHORT_REF: Final = MAX_REF_BYTES // 4


def _check_refs(i: int, actor: object, episode: object) -> None:
    """An event's actor and episode are strings of at most MAX_REF_BYTES bytes (or None):
    anything else would be written and then fail every read of the log."""
    for field, value in (("actor", actor), ("episode", episode)):
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValidationError(f"[{i}].{field}", value, "is not a string")
        if len(value.encode()) > MAX_REF_BYTES:
            raise ValidationError(
                f"[{i}].{field}", value, f"is longer than {MAX_REF_BYTES} bytes (UTF-8)"
            )


def _raw(record: tuple[Any, ...] | None, link: ChainLink | None) -> RawRecord:
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


def _execute(cursor: Any, sql: str) -> None:
    try:
        cursor.execute(sql)
    except sqlite3.OperationalError as e:
        raise ApexmemError(f"the event log is busy or unwritable: {e}") from e
