"""The time index and the chain as stored: one `log_index` row per append.

A row sits at the append's last position and holds its transaction time (microseconds) and
the chain hashes of its events, 32 bytes each, in position order: a row whose chain holds k
hashes covers the k positions up to its own. An append's positions are consecutive (the
log checks them), so its rows tile the log. Logs written before kept a row per position: a
row of one hash, which reads the same way.

One row per append rather than per event: inserting a thousand small rows (and their
recorded_at index entries) was about 5% of a batched append's instructions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

import msgspec

__all__ = [
    "HASH_SIZE",
    "ChainLink",
    "Query",
    "chain_links",
    "chains",
    "copy_rows",
    "covered",
    "insert_row",
    "last_row",
    "row_links",
]

HASH_SIZE: Final = 32
_ROWS_PER_READ: Final = 500
Query = Callable[[str, Sequence[Any]], list[Any]]


class ChainLink(msgspec.Struct, frozen=True, gc=False):
    """One position's chain hash and time as stored, or why its chain row is unusable."""

    position: int
    recorded_at: int
    chain: bytes | None
    problem: str | None = None


def insert_row(cursor: Any, last_position: int, micros: int, hashes: list[bytes]) -> None:
    """Store one append's time and chain hashes at its last position."""
    cursor.execute(
        "INSERT INTO log_index VALUES (?,?,?)", (last_position, micros, bytearray(b"".join(hashes)))
    )


def last_row(cursor: Any) -> tuple[int, bytes] | None:
    """The latest append's time and last chain hash, or None for an empty log."""
    cursor.execute(
        f"SELECT recorded_at, substr(chain, -{HASH_SIZE}) FROM log_index "
        "ORDER BY position DESC LIMIT 1"
    )
    row = cursor.fetchone()
    return None if row is None else (row[0], bytes(row[1]))


def chains(query: Query, positions: Sequence[int]) -> dict[int, bytes]:
    """The chain hash stored for each of these positions (those a row covers)."""

    def row_from(position: int) -> tuple[int, bytes] | None:
        rows = query(
            "SELECT position, chain FROM log_index WHERE position >= ? ORDER BY position LIMIT 1",
            (position,),
        )
        return (rows[0][0], bytes(rows[0][1])) if rows else None

    return covered(positions, row_from)


def covered(
    positions: Sequence[int], row_from: Callable[[int], tuple[int, bytes] | None]
) -> dict[int, bytes]:
    """The chain hash of each position, from the rows `row_from(p)` gives: the (position,
    chain) of the first row at or after `p`, or None past the last row."""
    found: dict[int, bytes] = {}
    first, last, hashes = 1, 0, b""
    for position in sorted(set(positions)):
        if not first <= position <= last:
            row = row_from(position)
            if row is None:
                break
            last, hashes = row
            first = last - len(hashes) // HASH_SIZE + 1
            if position < first:
                continue
        offset = (position - first) * HASH_SIZE
        found[position] = hashes[offset : offset + HASH_SIZE]
    return found


def chain_links(query: Query, start: int, stop: int) -> Iterator[ChainLink]:
    """Every position's chain hash from `start` to `stop`, in position order (the rows up
    to `stop`; see `row_links`)."""

    def rows() -> Iterator[tuple[int, int, bytes]]:
        after = start - 1
        while page := query(
            # A chain changed into text (only by editing the file) is read as its bytes.
            "SELECT position, recorded_at, CAST(chain AS BLOB) FROM log_index "
            "WHERE position > ? AND position <= ? ORDER BY position LIMIT ?",
            (after, stop, _ROWS_PER_READ),
        ):
            yield from page
            after = page[-1][0]

    return row_links(rows(), start)


def row_links(rows: Iterable[tuple[int, int, bytes]], start: int) -> Iterator[ChainLink]:
    """The chain link of each position from `start` that the (position, recorded_at, chain)
    rows cover, given in position order from the first row at or after `start`.

    Stops at the first row that is not a whole number of hashes or that covers positions
    an earlier row covers, with a link naming the problem at the position after the last
    good one (only a changed file has such rows).
    """
    after = 0  # the last position covered so far
    for position, micros, stored in rows:
        chain = bytes(stored)
        count, rest = divmod(len(chain), HASH_SIZE)
        first = position - count + 1
        if rest or not count or first <= after:
            problem = _malformed(position, len(chain), first, after)
            yield ChainLink(max(after + 1, start), micros, None, problem)
            return
        for i in range(max(0, start - first), count):
            offset = i * HASH_SIZE
            yield ChainLink(first + i, micros, chain[offset : offset + HASH_SIZE])
        after = position


def _malformed(position: int, size: int, first: int, after: int) -> str:
    if size == 0 or size % HASH_SIZE:
        return f"the chain row at position {position} holds {size} bytes, not whole hashes"
    return (
        f"the chain row at position {position} covers positions {first}..{after}, "
        "which an earlier row covers"
    )


def copy_rows(execute: Callable[[str, Sequence[Any]], Any], until: int) -> None:
    """Copy the rows of `source.log_index` up to position `until` into `log_index`.

    The append that `until` falls inside keeps its hashes up to `until`, at `until`.
    """
    execute("INSERT INTO log_index SELECT * FROM source.log_index WHERE position <= ?", (until,))
    execute(
        "INSERT INTO log_index SELECT ?, recorded_at, "
        f"substr(chain, 1, (? - position + length(chain) / {HASH_SIZE}) * {HASH_SIZE}) "
        f"FROM source.log_index WHERE position > ? AND position - length(chain) / {HASH_SIZE} < ? "
        "ORDER BY position LIMIT 1",
        (until, until, until, until),
    )
