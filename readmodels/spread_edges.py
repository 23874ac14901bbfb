"""The believed edges touching some entities, as spreading activation weighs them: one
narrow statement per hop (ids as stored, only the columns a spread reads)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import BindParameter, ClauseElement, Connection, bindparam, func, select, union_all

from apexmem.domain.recall.activation import Edge
from apexmem.events.timeutil import from_micros
from apexmem.readmodels.decay import ConfidenceNow
from apexmem.readmodels.facts import prepared_believed
from apexmem.readmodels.moment import EVERY_FACT, Lens
from apexmem.readmodels.prepared import Prepared, as_stored, stored_time
from apexmem.readmodels.tables import facts, retrievals

__all__ = ["activation_edges"]


def activation_edges(
    connection: Connection,
    ids: Sequence[str],
    *,
    lens: Lens = EVERY_FACT,
    confidence_now: ConfidenceNow | None = None,
    dated: bool = True,
) -> list[Edge[str]]:
    """The edges `lens` sees touching `ids`, as spreading activation weighs them (ids as
    stored: hex, converted by no one: a spread walks thousands of them); confidences
    decayed by `confidence_now` when given. Without `dated` their `valid_from` is left
    unset (a spread without a temporal decay rate never reads it)."""
    now = confidence_now if confidence_now is not None else _as_stored
    params: dict[str, Any] = {**lens.params(), "ids": list(ids)}
    found = []
    seen: set[str] = set()
    for (
        fact_id,
        subject,
        object_,
        edge_type,
        confidence,
        count,
        valid_from,
        observed,
    ) in _EDGES.rows(connection, params, *lens.shape()):
        if fact_id in seen:
            continue
        seen.add(fact_id)
        found.append(
            Edge(
                edge_id=fact_id,
                source=subject,
                target=object_,
                edge_type=edge_type,
                confidence=now(confidence, observed, edge_type),
                retrieval_count=count,
                valid_from=from_micros(valid_from) if dated else None,
            )
        )
    return found


def _edges_statement(valid: bool, known: bool, typed: bool, fading: bool) -> ClauseElement:
    """Only what a spread weighs of the believed edges touching `ids`: one index search per
    side (an edge between two of them comes once from each), not an OR of the two."""
    ids: BindParameter[Any] = bindparam("ids", expanding=True)
    sides = [
        select(
            as_stored(facts.c.fact_id),
            as_stored(facts.c.subject_id),
            as_stored(facts.c.object_id),
            facts.c.edge_type,
            facts.c.confidence,
            func.coalesce(retrievals.c.count, 0.0),
            stored_time(facts.c.valid_from),
            stored_time(facts.c.observed_at),
        )
        .select_from(facts.outerjoin(retrievals, retrievals.c.fact_id == facts.c.fact_id))
        .where(
            as_stored(end).in_(ids),
            facts.c.object_id.is_not(None),
            *prepared_believed(valid, known, typed, fading),
        )
        for end in (facts.c.subject_id, facts.c.object_id)
    ]
    return union_all(*sides)


_EDGES: Final = Prepared(_edges_statement, keyed=True)


def _as_stored(confidence: float, _observed_at: int, _edge_type: str) -> float:
    return confidence
