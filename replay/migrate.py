"""Copying a memory's log to another backend (`apexmem migrate`): verified before it leaves,
written as stored, verified again on arrival, with the same head.

Stop the source's writers first: what is appended during the copy is not carried over
(verification on arrival then fails rather than leave a partial copy unnoticed).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import msgspec

from apexmem.events.chain import GENESIS
from apexmem.events.erasure import vouches_after
from apexmem.events.errors import IntegrityViolation
from apexmem.events.ports import Log
from apexmem.events.restore import Restored, RestoredKey, appends_of
from apexmem.events.timeutil import to_micros
from apexmem.replay.verify import Head, head, verify

__all__ = ["Migrated", "RestorableLog", "migrate"]


class RestorableLog(Log, Protocol):
    """A log another log's stored records can be written into, as they are."""

    def restore(self, appends: Iterable[Restored], keys: Iterable[RestoredKey]) -> int:
        """Write the appends and idempotency keys into this empty log, all or nothing."""
        ...


class Migrated(msgspec.Struct, frozen=True, kw_only=True):
    """What a migration copied and the head both logs now share."""

    events: int
    keys: int
    head_position: int
    head: str


def migrate(source: Log, target: RestorableLog, *, until: int | None = None) -> Migrated:
    """Copy `source` (up to position `until`, else whole) into the empty `target`.

    Raises IntegrityViolation when `source` does not verify (nothing written) or the copy
    does not arrive whole.
    """
    before = verify(source)
    if not before.ok:
        raise IntegrityViolation(
            f"the source log does not verify (position {before.first_bad_position}: "
            f"{before.reason}); nothing was copied"
        )
    expected = head(source) if until is None else _head_at(source, until)
    last = expected.position
    cutoff = _recorded_at(source, last)
    keys = [
        RestoredKey(kept=kept, receipt=_receipt(source, kept.key))
        for kept in source.keyed_appends()
        if (kept.last_position or 0) <= last and kept.recorded_at <= cutoff
    ]
    records = (r for r in source.raw_records() if r.position <= last)
    written = target.restore(appends_of(records), keys)
    keep = getattr(target, "keep_vouches", None)  # a SQLite copy keeps what a cut needs
    if until is not None and keep is not None:
        keep(vouches_after(source, last))
    after = verify(target, expect=expected)
    if not after.ok:
        raise IntegrityViolation(
            f"the copy does not verify (position {after.first_bad_position}: {after.reason}); "
            "was the source written to during the copy? Remove the target and migrate again"
        )
    return Migrated(
        events=written, keys=len(keys), head_position=expected.position, head=expected.chain
    )


def _head_at(log: Log, position: int) -> Head:
    chain = log.chains([position]).get(position) if position else GENESIS
    if chain is None:
        raise IntegrityViolation(f"position {position} has no chain hash to copy up to")
    return Head(position, chain.hex())


def _recorded_at(log: Log, position: int) -> int:
    """The transaction time (microseconds) of `position`'s append; -1 before the first."""
    if position == 0:
        return -1
    found = next(iter(log.read(start=position, stop=position)), None)
    return -1 if found is None else to_micros(found.recorded_at)


def _receipt(log: Log, key: str) -> bytes | None:
    first = log.repeated(key)
    return None if first is None else first.receipt
