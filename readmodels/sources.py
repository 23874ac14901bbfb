"""Which log the read models were projected from: the chain hash at each tracked position.

The chain hash at position p names the log's whole prefix up to p, so a projection that
stored it beside its position can tell, on open, a log restored from an older copy,
emptied or replaced (`replay.projections.Projections`). A table of its own, beside
`tracking`, so stores written before gain it on open without a new layout.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    LargeBinary,
    MetaData,
    String,
    Table,
    bindparam,
    delete,
    insert,
    select,
    update,
)

from apexmem.readmodels.bulk import write_rows

__all__ = ["chain_at", "forget_chains", "note_chain", "sources_metadata", "tracked_chains"]

sources_metadata = MetaData()

tracked_chains = Table(
    "tracked_chains",
    sources_metadata,
    Column("projection", String(64), primary_key=True),
    Column("position", BigInteger, nullable=False),
    Column("chain", LargeBinary, nullable=False),
)
"""Per projection: the log's chain hash at the position it applied up to, when it did."""


def note_chain(connection: Connection, projection: str, position: int, chain: bytes | None) -> None:
    """Record the log's chain hash at the position `projection` has reached (same
    transaction as the position); None (a position without a hash) forgets it."""
    if chain is None:
        connection.execute(delete(tracked_chains).where(tracked_chains.c.projection == projection))
        return
    row = [{"name": projection, "reached": position, "chain": chain}]
    # Compiled once and run through the driver, as `set_position`: after every inline write.
    if write_rows(connection, ("tracked_chains", "move"), lambda: _MOVE, row) == 0:
        write_rows(connection, ("tracked_chains", "start"), lambda: _START, row)


_MOVE: Final = (
    update(tracked_chains)
    .where(tracked_chains.c.projection == bindparam("name"))
    .values(position=bindparam("reached"), chain=bindparam("chain"))
)
_START: Final = insert(tracked_chains).values(
    projection=bindparam("name"), position=bindparam("reached"), chain=bindparam("chain")
)


def chain_at(connection: Connection, projection: str) -> tuple[int, bytes] | None:
    """The (position, chain hash) `projection` last recorded, if any."""
    row = connection.execute(
        select(tracked_chains.c.position, tracked_chains.c.chain).where(
            tracked_chains.c.projection == projection
        )
    ).first()
    return None if row is None else (int(row[0]), bytes(row[1]))


def forget_chains(connection: Connection) -> None:
    """Forget every recorded chain hash (the read models were dropped)."""
    connection.execute(delete(tracked_chains))
