"""A full disk: errors that name it, and reads of a database that need no space.

A database in WAL mode is read through its `-shm` file, which the first connection to open
it creates and sizes. On a disk with no space left that fails ("disk I/O error"), so even a
read-only command could not open the log. When the `-wal` file holds nothing, the database
file alone holds every committed page and is opened `immutable` instead: read-only, no
`-shm`, no lock, nothing written.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any, Final

from apexmem.events.errors import DiskFullError

__all__ = ["RECHECK_SECS", "ReadOnlyOnFullDisk", "connect", "full_disk", "is_full"]

RECHECK_SECS: Final = 1.0
"""How long a `ReadOnlyOnFullDisk` connection serves before the disk is tried again: being
immutable, it sees no write made after it opened (another process's, or once space is back)."""

_FULL_CODES: Final = frozenset(
    {
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_IOERR_SHMSIZE,
        sqlite3.SQLITE_IOERR_SHMOPEN,
        sqlite3.SQLITE_IOERR_SHMMAP,
    }
)
"""SQLite's codes for a disk with no room: full, or the shared-memory file not growable."""
_FULL_ERRNOS: Final = frozenset({errno.ENOSPC, errno.EDQUOT})


class ReadOnlyOnFullDisk(sqlite3.Connection):
    """A connection opened read-only because the disk was too full to open it otherwise."""


def is_full(error: BaseException | None) -> bool:
    """Whether `error` (or what it wraps) is SQLite or the system finding no space left."""
    while error is not None:
        if isinstance(error, sqlite3.Error):
            return getattr(error, "sqlite_errorcode", None) in _FULL_CODES
        if isinstance(error, OSError) and error.errno in _FULL_ERRNOS:
            return True
        error = getattr(error, "orig", None) or error.__cause__
    return False


def full_disk(path: Path | str, error: BaseException | None = None) -> DiskFullError:
    """The error to raise for `error`, a full disk found while writing the file at `path`."""
    return DiskFullError(
        f"the disk holding {Path(path).resolve().parent} is full ({_said(error)}); "
        "free some space, then retry"
    )


def connect(path: Path | str, **options: Any) -> sqlite3.Connection:
    """`sqlite3.connect(path, **options)` that still reads a database on a full disk.

    The first read tells: when it fails for lack of space and the `-wal` file holds nothing,
    the database is opened again as a `ReadOnlyOnFullDisk` connection, immutable. When the
    `-wal` file holds pages, reading them needs the `-shm` file: DiskFullError.
    """
    raw: sqlite3.Connection = sqlite3.connect(str(path), **options)
    try:
        raw.execute("PRAGMA schema_version").fetchone()
    except sqlite3.OperationalError as e:
        raw.close()
        if not is_full(e):
            raise
        if _wal_holds_pages(path):
            raise full_disk(path, e) from e
        uri = f"{Path(path).absolute().as_uri()}?mode=ro&immutable=1"
        raw = sqlite3.connect(uri, **{**options, "uri": True, "factory": ReadOnlyOnFullDisk})
    return raw


def _wal_holds_pages(path: Path | str) -> bool:
    try:
        return Path(f"{path}-wal").stat().st_size > 0
    except FileNotFoundError:
        return False


def _said(error: BaseException | None) -> str:
    """SQLite's or the system's own words, without SQLAlchemy's statement and link."""
    while error is not None:
        if isinstance(error, sqlite3.Error):
            return f"SQLite: {error}"
        if isinstance(error, OSError) and error.strerror:
            return error.strerror
        error = getattr(error, "orig", None) or error.__cause__
    return "SQLite: database or disk is full"
