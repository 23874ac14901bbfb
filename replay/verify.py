"""Chain verification: recompute the blake3 chain and name the first position that breaks it.

Besides the chain itself, `verify` checks what is read beside it: the time index (each
position's `recorded_at`, which time travel reads, must be the time chained in its record)
and the idempotency keys (`replay.keychecks`). `head` is the chain's last position and
hash, to keep elsewhere and check with `verify(expect=...)`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import suppress
from typing import Final
from uuid import UUID

import msgspec
from blake3 import blake3

from apexmem.events.chain import GENESIS, link
from apexmem.events.envelope import RawRecord
from apexmem.events.erasure import ERASED_TAG, RecordsErased, is_blank
from apexmem.events.errors import ValidationError
from apexmem.events.ports import Log
from apexmem.events.sqlite import is_damaged
from apexmem.events.timeutil import UtcDateTime, to_micros
from apexmem.replay.keychecks import KeyChecks, Problem

__all__ = ["TAIL", "Head", "VerifyReport", "head", "parse_head", "verify", "verify_tail"]

TAIL: Final = 64
"""Positions `verify_tail` checks at the end of the log (what opening a memory checks)."""


class Head(msgspec.Struct, frozen=True):
    """The chain's last position and its hash (hex); position 0 and GENESIS when empty."""

    position: int
    chain: str

    def __str__(self) -> str:
        return f"{self.position}:{self.chain}"


class VerifyReport(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of `verify()`: ok, how many events were checked, the first bad position."""

    ok: bool
    events_checked: int
    first_bad_position: int | None = None
    reason: str | None = None
    head: str | None = None
    """Hex of the last chain hash: keep it elsewhere to detect a rewrite of the whole file."""
    head_position: int | None = None
    erased_elsewhere: list[str] | None = None
    """In a copy cut before an erasure (`replay --into`): the erasures, after the copy's
    end, that vouched for its blanked records, as `POSITION:HEX` of the log it was copied
    from; check that log holds them (`apexmem verify --expect POSITION:HEX` there)."""


class _Envelope(msgspec.Struct, frozen=True):
    """The chained fields of a record that are read beside the chain (its payload skipped)."""

    recorded_at: UtcDateTime
    cause: str | None = None


_envelope: Final = msgspec.json.Decoder(_Envelope)


def head(log: Log) -> Head:
    """The log's last position and the chain hash stored there."""
    position = log.last_position()
    chain = log.chains([position]).get(position) if position else GENESIS
    return Head(position, (chain if chain is not None else GENESIS).hex())


def parse_head(text: str) -> Head | tuple[None, str]:
    """A kept head: `POSITION:HEX` (the chain at that position), or `HEX` (the last one).

    Raises ValidationError naming the value when it is neither.
    """
    position, _, chain = text.strip().rpartition(":")
    chain = chain.lower()
    if len(chain) != 64 or any(c not in "0123456789abcdef" for c in chain):
        raise ValidationError("expect", text, "is not HEX or POSITION:HEX (64 hex digits)")
    if not position:
        return (None, chain)
    if not position.isdigit():
        raise ValidationError("expect", text, "has a POSITION that is not a whole number")
    return Head(int(position), chain)


def verify(log: Log, *, expect: Head | tuple[None, str] | None = None) -> VerifyReport:
    """Recompute the chain over every record; any edit, removal or reordering is reported,
    as is a time index or idempotency key that disagrees with the chained records.

    `expect` (from `parse_head`) also fails the check unless the chain holds that hash at
    that position (or, for a bare hash, at its end): a log rewritten whole is found so.
    """
    unread: str | None = None
    try:
        keys = KeyChecks(log.keyed_appends())
    except Exception as e:  # eventsourcing wraps SQLite's error
        if not is_damaged(e):
            raise
        keys, unread = KeyChecks(()), f"the idempotency keys are damaged and unreadable ({e})"
    vouches = _Vouches(log)
    vouches.read_all()  # so a listed position that still holds content is found too
    found = _walk(log.raw_records(), GENESIS, keys, expect, vouches)
    if isinstance(found, VerifyReport):
        return found
    checked, position, chain, kept = found
    if unread is not None:
        return VerifyReport(ok=False, events_checked=checked, reason=unread)
    problem = keys.beyond(position)
    if problem is not None:
        return _broken(checked, problem)
    last = Head(position, chain.hex())
    mismatch = _unexpected(expect, last, kept)
    if mismatch is not None:
        return VerifyReport(ok=False, events_checked=checked, reason=mismatch)
    return VerifyReport(
        ok=True,
        events_checked=checked,
        head=last.chain if position else None,
        head_position=position if position else None,
        erased_elsewhere=[f"{p}:{h}" for p, h in sorted(vouches.outside.items())] or None,
    )


def verify_tail(log: Log, *, count: int = TAIL) -> VerifyReport:
    """Recompute the chain over the last `count` positions only, from the hash stored before
    them: cheap enough for every open, and it finds damage at the end, where writes go on."""
    try:
        last = log.last_position()
        start = max(1, last - count + 1)
        previous = GENESIS if start == 1 else log.chains([start - 1]).get(start - 1)
    except Exception as e:  # eventsourcing wraps SQLite's error
        if not is_damaged(e):
            raise
        return VerifyReport(
            ok=False,
            events_checked=0,
            reason=f"the file is damaged and SQLite cannot read it ({e})",
        )
    if previous is None:
        return _broken(start - 1, Problem(start - 1, "the chain row of this position is missing"))
    found = _walk(log.raw_records(start=start), previous, KeyChecks(()), None, _Vouches(log))
    if isinstance(found, VerifyReport):
        return found
    checked, position, chain, _ = found
    return VerifyReport(
        ok=True,
        events_checked=checked,
        head=chain.hex() if position else None,
        head_position=position if position else None,
    )


def _walk(
    records: Iterator[RawRecord],
    chain: bytes,
    keys: KeyChecks,
    expect: Head | tuple[None, str] | None,
    vouches: _Vouches,
) -> VerifyReport | tuple[int, int, bytes, bytes | None]:
    """The report at the first problem, else (events checked, the last position, its chain,
    the chain at the expected position)."""
    checked = position = last_time = 0
    kept: bytes | None = None
    early = keys.early
    try:
        for record in records:
            if early and early[0].position <= record.position:
                return _broken(checked, early[0])
            problem = record.problem or _problem(record, chain, last_time, keys, vouches)
            if problem is not None:
                return _broken(checked, Problem(record.position, problem))
            assert record.chain is not None and record.recorded_at is not None
            chain = record.chain
            last_time = record.recorded_at
            checked += 1
            position = record.position
            if isinstance(expect, Head) and expect.position == position:
                kept = chain
    except sqlite3.DatabaseError as e:
        if not is_damaged(e):
            raise
        return _broken(  # SQLite cannot read on: the next position is the first unread
            checked,
            Problem(position + 1, f"the file is damaged and SQLite cannot read on ({e})"),
        )
    if early:
        return _broken(checked, early[0])
    return checked, position, chain, kept


def _broken(checked: int, problem: Problem) -> VerifyReport:
    return VerifyReport(
        ok=False,
        events_checked=checked,
        first_bad_position=problem.position,
        reason=problem.reason,
    )


def _unexpected(
    expect: Head | tuple[None, str] | None, last: Head, kept: bytes | None
) -> str | None:
    """Why the chain does not hold the kept head, or None."""
    if expect is None:
        return None
    if not isinstance(expect, Head):
        if last.chain == expect[1]:
            return None
        return f"the head is {last}, not the kept {expect[1]} (the log was rewritten or moved on)"
    if expect.position > last.position:
        return (
            f"the log ends at position {last.position}, before the kept head {expect} "
            "(emptied, truncated or restored from an older copy)"
        )
    held = GENESIS.hex() if expect.position == 0 else kept.hex() if kept is not None else None
    if held == expect.chain:
        return None
    return (
        f"the chain at position {expect.position} is {held}, not the kept {expect.chain} "
        "(the log was rewritten)"
    )


def _problem(
    record: RawRecord, previous: bytes, last_time: int, keys: KeyChecks, vouches: _Vouches
) -> str | None:
    if record.state is None or record.stream_id is None:
        return "the event at this position is missing (its chain row remains)"
    if record.chain is None or record.recorded_at is None:
        return "the chain row of this position is missing"
    state = record.state if isinstance(record.state, bytes) else str(record.state).encode()
    # A blanked record's hash cannot be recomputed: it must be the one a later erasure
    # event committed to. Its kept envelope is checked like any other.
    problem = (
        vouches.problem(record.position, record.chain, state)
        if is_blank(state)
        else _chain_problem(record, previous, state, vouches)
    )
    if problem is not None:
        return problem
    if record.recorded_at < last_time:
        return "recorded_at decreases at this position"
    return _beside(record.position, record.recorded_at, state, keys)


def _chain_problem(
    record: RawRecord, previous: bytes, state: bytes, vouches: _Vouches
) -> str | None:
    """Why the record's recomputed chain hash is not the stored one, or None."""
    assert record.version is not None and record.tag is not None
    try:
        expected = link(
            previous, UUID(str(record.stream_id)).bytes, int(record.version), str(record.tag), state
        )
    except (TypeError, ValueError):
        return "the record is malformed (its stream id, version or tag is not what was written)"
    if expected != record.chain:
        return "the chain hash does not match the stored event (edited, removed or reordered)"
    if vouches.listed(record.position):
        return "an erasure lists this position, but its record still holds its content"
    return None


class _Vouches:
    """What each erasure event committed to for the positions it blanked: the chain hash
    stored there and the blake3 hash of the blanked bytes.

    Read from the log only once a blanked record is met (a log with no erasure pays
    nothing): every `records-erased.v1` at or after that position, chained after it.
    """

    def __init__(self, log: Log) -> None:
        self._log = log
        self._by: dict[int, tuple[bytes, bytes, int]] | None = None
        self._outside: dict[int, tuple[bytes, bytes, int, bytes]] | None = None
        self.outside: dict[int, str] = {}
        """Erasures outside this log that vouched for its blanked records: their
        positions in the log it was copied from, and their chain hashes there."""

    def problem(self, position: int, chain: bytes, state: bytes) -> str | None:
        """Why the blanked record at `position` is not vouched for, or None when a later
        erasure event committed to exactly this chain hash and these bytes."""
        vouched = self._read(position).get(position)
        if vouched is None:
            vouched = self._elsewhere(position)
        if vouched is None:
            return (
                "the record at this position is blanked, but no erasure event after it "
                "lists it (erased outside apexmem forget)"
            )
        if vouched[0] != chain or vouched[1] != blake3(state).digest():
            return (
                "the record at this position is blanked, but its chain hash or its bytes "
                f"are not those the erasure at position {vouched[2]} committed to (edited)"
            )
        return None

    def _elsewhere(self, position: int) -> tuple[bytes, bytes, int] | None:
        """A copy cut before an erasure keeps what that erasure committed to; the erasure
        itself is checked in the log the copy was made from (`outside` says where)."""
        if self._outside is None:
            read = getattr(self._log, "vouched_elsewhere", None)
            self._outside = read() if read is not None else {}
        found = self._outside.get(position)
        if found is None:
            return None
        self.outside.setdefault(found[2], found[3].hex())
        return found[0], found[1], found[2]

    def read_all(self) -> None:
        """Read every erasure event now (a full `verify`; `verify_tail` reads them only
        once it meets a blanked record). A file SQLite cannot read through is left to the
        walk, which names where it stops."""
        try:
            self._read(1)
        except Exception as e:  # eventsourcing wraps SQLite's error
            if not is_damaged(e):
                raise
            self._by = None

    def listed(self, position: int) -> bool:
        """Whether an erasure already read lists this (unblanked) position."""
        return self._by is not None and position in self._by

    def _read(self, start: int) -> dict[int, tuple[bytes, bytes, int]]:
        if self._by is None:
            self._by = {}
            for event in self._log.read(start=start, tags=(ERASED_TAG,)):
                data = event.data
                if not isinstance(data, RecordsErased):
                    continue  # a blanked erasure event: it vouches for nothing
                for p, chain, kept in zip(data.positions, data.chains, data.blanks, strict=False):
                    with suppress(ValueError):
                        vouched = (bytes.fromhex(chain), bytes.fromhex(kept), event.position)
                        self._by.setdefault(p, vouched)
        return self._by


def _beside(position: int, recorded_at: int, state: bytes, keys: KeyChecks) -> str | None:
    """What disagrees with the chained record among what is read beside the chain: the time
    index and the idempotency keys."""
    try:
        envelope = _envelope.decode(state)
    except msgspec.DecodeError as e:
        return f"the record's envelope does not decode ({e})"
    chained = to_micros(envelope.recorded_at)
    if chained != recorded_at:
        return (
            f"the time index (log_index.recorded_at) says {recorded_at} µs, but the "
            f"record was chained as recorded at {chained} µs (edited)"
        )
    return keys.problem(position, recorded_at, envelope.cause)
