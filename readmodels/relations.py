"""Which relations a memory's facts hold: what a recall's `relations` filter may name."""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection, bindparam, select

from apexmem.readmodels.prepared import Prepared
from apexmem.readmodels.tables import facts

__all__ = ["relation_held"]

_HELD: Final = Prepared(
    lambda: select(facts.c.relation).where(facts.c.relation == bindparam("relation")).limit(1)
)


def relation_held(connection: Connection, relation: str) -> bool:
    """Whether any fact version (in any state) has `relation` (canonical)."""
    return bool(_HELD.rows(connection, {"relation": relation}))
