"""The SQLite log's side of an erasure: blanking records in place, scrubbing the file and
its WAL, and the table a copy cut before an erasure keeps (`events.erasure` says why)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from blake3 import blake3

from apexmem.events.chainrows import Query, chains
from apexmem.events.erasure import Vouch, blank, redacted_receipt
from apexmem.events.errors import ApexmemError
from apexmem.events.logreads import READ_CHUNK
from apexmem.events.sqlite import EVENTS_TABLE

__all__ = ["blank_rows", "copy_vouches", "scrub", "vouched_elsewhere"]

_VOUCHES: Final = "erased_elsewhere"


def blank_rows(
    cursor: Any, query: Query, positions: Sequence[int]
) -> dict[int, tuple[bytes, bytes]]:
    """Blank the records at these positions, on `cursor` inside the write lock; for each,
    the chain hash stored there and the blake3 hash of the blanked bytes left there.

    The receipts kept with the idempotency keys of the appends that wrote these records
    lose their text (`redacted_receipt`: an alias claimed, say). secure_delete makes
    SQLite overwrite the freed bytes in the file's pages; the WAL and free pages are
    cleared by `scrub`.
    """
    wanted = sorted(set(positions))
    if not wanted:
        return {}
    cursor.execute("PRAGMA secure_delete=ON")
    stored = chains(query, wanted)
    done: dict[int, tuple[bytes, bytes]] = {}
    for i in range(0, len(wanted), READ_CHUNK):
        part = wanted[i : i + READ_CHUNK]
        marks = ",".join("?" * len(part))
        rows = query(f"SELECT rowid, state FROM {EVENTS_TABLE} WHERE rowid IN ({marks})", part)
        blanked = [(rowid, blank(bytes(state))) for rowid, state in rows]
        cursor.executemany(
            f"UPDATE {EVENTS_TABLE} SET state=? WHERE rowid=?",
            [(bytearray(state), rowid) for rowid, state in blanked],
        )
        done.update((rowid, (stored[rowid], blake3(state).digest())) for rowid, state in blanked)
    receipts = {
        key: receipt
        for p in wanted
        for key, receipt in query(
            "SELECT key, receipt FROM idempotency WHERE receipt IS NOT NULL "
            "AND ? BETWEEN first_position AND last_position",
            (p,),
        )
    }
    cursor.executemany(
        "UPDATE idempotency SET receipt=? WHERE key=?",
        [(bytearray(redacted_receipt(bytes(r))), k) for k, r in receipts.items()],
    )
    return done


def scrub(cursor: Any, path: Path) -> None:
    """Copy the WAL back and empty it, rebuild the file from its live rows (VACUUM), and
    empty the WAL again, on a connection outside any transaction."""
    cursor.execute("PRAGMA secure_delete=ON")
    _checkpoint(cursor, path)
    cursor.execute("VACUUM")
    _checkpoint(cursor, path)


def copy_vouches(connection: Any, vouches: Sequence[Vouch]) -> None:
    """Keep in a copy what erasures after its end committed to (see `vouched_elsewhere`)."""
    if not vouches:
        return
    connection.execute(
        f"CREATE TABLE IF NOT EXISTS {_VOUCHES} (position INTEGER PRIMARY KEY, "
        "chain BLOB NOT NULL, blank BLOB NOT NULL, erasure INTEGER NOT NULL, "
        "erasure_chain BLOB NOT NULL)"
    )
    connection.executemany(f"INSERT OR IGNORE INTO {_VOUCHES} VALUES (?,?,?,?,?)", vouches)


def vouched_elsewhere(query: Query) -> dict[int, tuple[bytes, bytes, int, bytes]]:
    """What a copy keeps by `copy_vouches`, by position (empty in any other log)."""
    if not query("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (_VOUCHES,)):
        return {}
    rows = query(f"SELECT position, chain, blank, erasure, erasure_chain FROM {_VOUCHES}", ())
    return {p: (bytes(c), bytes(b), e, bytes(h)) for p, c, b, e, h in rows}


def _checkpoint(cursor: Any, path: Path) -> None:
    """Copy the WAL into the file and truncate it to nothing, or say who keeps it."""
    cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    busy, _, _ = cursor.fetchone()
    if busy:
        raise ApexmemError(
            f"the WAL of {path} could not be emptied: another connection is reading it; "
            "open the memory again once it is done (the erasure's clean-up then finishes)"
        )
