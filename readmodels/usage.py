"""A-MEM usage in the read models: retrieval-count decay passes applied, and asked about.

Counts stay whole numbers: a pass truncates `count * factor`, as the reference does
(`CAST(count * lambda AS INTEGER)`). Sums of whole numbers do not depend on how the log
was batched, so a rebuild gives exactly the counts incremental projection gave.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Final

import msgspec
from sqlalchemy import Connection, bindparam, insert, select, update

from apexmem.projections.usage import CountsDecayed
from apexmem.readmodels.tables import retrievals, usage_decays

__all__ = ["UsageDecayRow", "apply_decay", "usage_decays_of"]

_RECOUNT: Final = (
    update(retrievals)
    .where(retrievals.c.fact_id == bindparam("b_fact_id"))
    .values(count=bindparam("b_count"))
)


class UsageDecayRow(msgspec.Struct, frozen=True, kw_only=True):
    """One decay pass as projected."""

    position: int
    factor: float
    cutoff: datetime
    decayed_at: datetime
    decayed: int
    """Retrieval counts it multiplied (facts retrieved before the cutoff, count above 0)."""


def apply_decay(connection: Connection, change: CountsDecayed) -> None:
    """Multiply and truncate the counts of facts last retrieved before the cutoff; record
    the pass (caller's transaction, after every retrieval before it was counted)."""
    due = connection.execute(
        select(retrievals.c.fact_id, retrievals.c.count).where(
            retrievals.c.last_retrieved_at < change.cutoff, retrievals.c.count > 0
        )
    ).all()
    if due:
        connection.execute(
            _RECOUNT,
            [
                {"b_fact_id": fact_id, "b_count": float(math.floor(count * change.factor))}
                for fact_id, count in due
            ],
        )
    connection.execute(
        insert(usage_decays).values(
            position=change.position,
            factor=change.factor,
            cutoff=change.cutoff,
            decayed_at=change.at,
            decayed=len(due),
        )
    )


def usage_decays_of(
    connection: Connection, *, at: int | None = None, limit: int = 1
) -> list[UsageDecayRow]:
    """The latest decay passes, newest first (only the one at log position `at` if given)."""
    statement = select(usage_decays).order_by(usage_decays.c.position.desc()).limit(limit)
    if at is not None:
        statement = statement.where(usage_decays.c.position == at)
    return [
        msgspec.convert(row, UsageDecayRow, from_attributes=True)
        for row in connection.execute(statement)
    ]
