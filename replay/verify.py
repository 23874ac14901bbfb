"""Chain verification: recompute the blake3 chain and name the first position that breaks it."""

from __future__ import annotations

import sqlite3
from uuid import UUID

import msgspec

from apexmem.events.chain import GENESIS, link
from apexmem.events.envelope import RawRecord
from apexmem.events.ports import Log
from apexmem.events.sqlite import is_damaged

__all__ = ["VerifyReport", "verify"]


class VerifyReport(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of `verify()`: ok, how many events were checked, the first bad position."""

    ok: bool
    events_checked: int
    first_bad_position: int | None = None
    reason: str | None = None
    head: str | None = None
    """Hex of the last chain hash: keep it elsewhere to detect a rewrite of the whole file."""


def verify(log: Log) -> VerifyReport:
    """Recompute the chain over every record; any edit, removal or reordering is reported."""
    chain = GENESIS
    checked = 0
    last_time = 0
    try:
        for record in log.raw_records():
            problem = record.problem or _problem(record, chain, last_time)
            if problem is not None:
                return VerifyReport(
                    ok=False,
                    events_checked=checked,
                    first_bad_position=record.position,
                    reason=problem,
                )
            assert record.chain is not None and record.recorded_at is not None
            chain = record.chain
            last_time = record.recorded_at
            checked += 1
    except sqlite3.DatabaseError as e:
        if not is_damaged(e):
            raise
        return VerifyReport(  # SQLite cannot read on: the next position is the first unread
            ok=False,
            events_checked=checked,
            first_bad_position=checked + 1,
            reason=f"the file is damaged and SQLite cannot read on ({e})",
        )
    return VerifyReport(ok=True, events_checked=checked, head=chain.hex() if checked else None)


def _problem(record: RawRecord, previous: bytes, last_time: int) -> str | None:
    if record.state is None or record.stream_id is None:
        return "the event at this position is missing (its chain row remains)"
    if record.chain is None or record.recorded_at is None:
        return "the chain row of this position is missing"
    assert record.version is not None and record.tag is not None
    try:
        state = record.state if isinstance(record.state, bytes) else str(record.state).encode()
        expected = link(
            previous, UUID(str(record.stream_id)).bytes, int(record.version), str(record.tag), state
        )
    except (TypeError, ValueError):
        return "the record is malformed (its stream id, version or tag is not what was written)"
    if expected != record.chain:
        return "the chain hash does not match the stored event (edited, removed or reordered)"
    if record.recorded_at < last_time:
        return "recorded_at decreases at this position"
    return None
