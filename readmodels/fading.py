"""The facts a decay pass looks at: believed versions under the recall threshold at a
moment, and, among given ones, those above it (the same SQL condition recall applies)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final
from uuid import UUID

from sqlalchemy import ColumnElement, Connection, not_, select

from apexmem.domain.fading import FactDecay
from apexmem.readmodels.decay import Fading
from apexmem.readmodels.facts import known
from apexmem.readmodels.tables import facts

__all__ = ["above_among", "faded_facts", "sentences_of"]

_CHUNK: Final = 400
_COLUMNS: Final = (
    facts.c.fact_id,
    facts.c.slot_id,
    facts.c.edge_type,
    facts.c.confidence,
    facts.c.observed_at,
)


def _believed_now() -> list[ColumnElement[bool]]:
    # Believed as the store knows it now, whatever their valid time: decay is about how
    # sure the memory is, and recall of a past window leaves faded facts out as well.
    return [facts.c.standing == "believed", known(None)]


def faded_facts(connection: Connection, fading: Fading) -> list[FactDecay]:
    """Believed fact versions whose confidence decayed to `fading.at` is under the
    threshold (the ones recall leaves out), by fact id."""
    statement = (
        select(*_COLUMNS)
        .where(*_believed_now(), not_(fading.condition()))
        .order_by(facts.c.fact_id)
    )
    return _decays(connection.execute(statement), fading)


def above_among(connection: Connection, ids: Sequence[UUID], fading: Fading) -> list[FactDecay]:
    """Those of `ids` that are believed and not under the threshold at `fading.at`."""
    found: list[FactDecay] = []
    for i in range(0, len(ids), _CHUNK):
        statement = select(*_COLUMNS).where(
            facts.c.fact_id.in_(list(ids[i : i + _CHUNK])), *_believed_now(), fading.condition()
        )
        found.extend(_decays(connection.execute(statement), fading))
    return sorted(found, key=lambda f: str(f.fact_id))


def sentences_of(connection: Connection, ids: Sequence[UUID]) -> dict[UUID, str]:
    """The sentence each of these fact versions reads as now (its open row)."""
    found: dict[UUID, str] = {}
    for i in range(0, len(ids), _CHUNK):
        statement = select(facts.c.fact_id, facts.c.fact).where(
            facts.c.fact_id.in_(list(ids[i : i + _CHUNK])), known(None)
        )
        found.update((row.fact_id, row.fact) for row in connection.execute(statement))
    return found


def _decays(rows: object, fading: Fading) -> list[FactDecay]:
    return [
        FactDecay(
            fact_id=row.fact_id,
            slot_id=row.slot_id,
            edge_type=row.edge_type,
            confidence=row.confidence,
            observed_at=row.observed_at,
            rate=fading.rates.get(row.edge_type, 0.0),
        )
        for row in rows  # type: ignore[attr-defined]
    ]
