"""The read-model store as a contract: what the projections and services use of it.

`readmodels.store.ReadModelStore` (SQLite) implements it; tests/contract runs the same
tests against each implementation. Tracking positions are read and moved with
`tracked_position` and `set_position` on a connection the store gives (SQLAlchemy Core, so
any backend SQLAlchemy speaks shares them).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

if TYPE_CHECKING:
    from apexmem.readmodels.store import ReadCheck

__all__ = ["ReadModels"]


class ReadModels(Protocol):
    """Where read models live: transactions to read and write them, and their upkeep."""

    @property
    def path(self) -> Path:
        """Where the store keeps its rows (the vector index file sits beside it)."""
        ...

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine, for tables kept apart from the graph's (the vector cache)."""
        ...

    def read(self) -> AbstractContextManager[Connection]:
        """One read transaction: every query inside it sees the same committed state."""
        ...

    def check_reads(self, check: ReadCheck | None) -> None:
        """Have this thread's next read transaction check `check` first (None: forget it)."""
        ...

    def write(self) -> AbstractContextManager[Connection]:
        """One write transaction holding the write lock from its start; committed on exit,
        rolled back on an error."""
        ...

    def reset(self, connection: Connection) -> None:
        """Drop and recreate every table inside the caller's transaction (empty again)."""
        ...

    def drop_indexes(self, connection: Connection) -> None:
        """Drop every secondary index, inside the caller's transaction (before a bulk load)."""
        ...

    def create_indexes(self, connection: Connection) -> None:
        """Create every secondary index that is missing, inside the caller's transaction."""
        ...

    def close(self) -> None:
        """Close every pooled connection; the rows stay."""
        ...
