"""Idempotency keys checked against the chained records: a key names its own append.

The chain does not cover the idempotency table, but every event a keyed write stages
carries the key as its `cause`, and every record its transaction time, both chained. So a
key row whose positions hold another key's events, events of another time, positions the
log does not have, or positions another key names, was not written by an append; nor was
one whose key's events lie outside its positions. A key laid over an append made without
any key, with that append's time copied, is not told apart (documented in the README).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise
from typing import NamedTuple

from apexmem.events.envelope import KeyedAppend

__all__ = ["KeyChecks", "Problem"]


class Problem(NamedTuple):
    """Where a check failed and why."""

    position: int
    reason: str


class KeyChecks:
    """The stored keys, checked as the records stream past in position order."""

    def __init__(self, keys: Iterable[KeyedAppend]) -> None:
        self._by_key: dict[str, KeyedAppend] = {}
        ranged: list[KeyedAppend] = []
        self.early: list[Problem] = []
        """Problems of the rows themselves, by position (before any record is read)."""
        for row in keys:
            self._by_key[row.key] = row
            first, last = row.first_position, row.last_position
            if first is None and last is None:
                continue  # an empty append: nothing chained to check it against
            if first is None or last is None or first > last or first < 1:
                where = max(1, first if first is not None else last or 1)
                self.early.append(Problem(where, f"{_named(row)} is malformed"))
                continue
            ranged.append(row)
        ranged.sort(key=lambda r: r.first_position or 0)
        for before, after in pairwise(ranged):
            if (after.first_position or 0) <= (before.last_position or 0):
                self.early.append(
                    Problem(
                        after.first_position or 0,
                        f"{_named(after)} overlaps {_named(before)}: one append per key",
                    )
                )
        self.early.sort()
        self._ranged = ranged
        self._next = 0  # the first ranged row not wholly before the current position

    def problem(self, position: int, recorded_at: int, cause: str | None) -> str | None:
        """What is wrong with the keys at the record at `position`, or None."""
        ranged = self._ranged
        while self._next < len(ranged) and (ranged[self._next].last_position or 0) < position:
            self._next += 1
        covering = ranged[self._next] if self._next < len(ranged) else None
        if covering is not None and (covering.first_position or 0) > position:
            covering = None
        if covering is not None:
            if cause is not None and cause != covering.key:
                return f"{_named(covering)} covers an event appended with key {cause!r} (forged)"
            if recorded_at != covering.recorded_at:
                return (
                    f"{_named(covering)} was recorded at {covering.recorded_at} µs, "
                    f"but this position at {recorded_at} µs (forged)"
                )
        if cause is not None and covering is None:
            own = self._by_key.get(cause)
            if own is not None:
                return f"this event was appended with key {cause!r}, but {_named(own)} (forged)"
        return None

    def beyond(self, last: int) -> Problem | None:
        """A key naming positions after `last`, the log's end (checked after the walk)."""
        for row in self._ranged:
            if (row.last_position or 0) > last:
                return Problem(
                    max(row.first_position or 0, last + 1),
                    f"{_named(row)}, beyond the log's last position {last} (forged)",
                )
        return None


def _named(row: KeyedAppend) -> str:
    if row.first_position is None and row.last_position is None:
        return f"idempotency key {row.key!r} names no positions"
    return f"idempotency key {row.key!r} names positions {row.first_position}..{row.last_position}"
