"""Merges and kept-apart pairs: entities merged forward (by hand or by similarity of names)
and the ambiguous pairs resolution by similarity recorded without merging."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

import msgspec
from sqlalchemy import Connection, Select, and_, select

from apexmem.readmodels.tables import entities, entity_matches

__all__ = ["MergeRow", "Verdict", "merges"]

Verdict = Literal["merged", "apart"]


class MergeRow(msgspec.Struct, frozen=True, kw_only=True):
    """One entity merged into another (`merged`), or judged not to be it (`apart`)."""

    entity_id: UUID
    name: str
    entity_type: str
    target_id: UUID
    target: str
    verdict: Verdict
    at: datetime
    score: float | None = None
    """The cosine of the two names, when similarity judged (None: merged by hand)."""
    judge: str | None = None
    """`threshold` or the disambiguator's name, when similarity judged."""


def merges(connection: Connection, *, apart: bool = False, limit: int = 100) -> list[MergeRow]:
    """Merges, oldest first; with `apart`, the pairs kept apart too (by time)."""
    source, target = entities.alias("source"), entities.alias("target")

    def pairs(at: Any) -> Select[Any]:
        return select(
            source.c.entity_id,
            source.c.name,
            source.c.entity_type,
            target.c.entity_id.label("target_id"),
            target.c.name.label("target"),
            at.label("at"),
            entity_matches.c.score,
            entity_matches.c.judge,
        )

    merged = (
        pairs(source.c.merged_at)
        .join(target, target.c.entity_id == source.c.merged_into)
        .outerjoin(
            entity_matches,
            and_(
                entity_matches.c.entity_id == source.c.entity_id,
                entity_matches.c.verdict == "same",
            ),
        )
        .order_by(source.c.merged_at, source.c.entity_id)
        .limit(limit)
    )
    rows = [_row(r._fields, tuple(r), "merged") for r in connection.execute(merged)]
    if apart:
        kept = (
            pairs(entity_matches.c.recorded_at)
            .join(source, source.c.entity_id == entity_matches.c.entity_id)
            .join(target, target.c.entity_id == entity_matches.c.candidate)
            .where(entity_matches.c.verdict == "different")
            .order_by(entity_matches.c.position)
            .limit(limit)
        )
        rows += [_row(r._fields, tuple(r), "apart") for r in connection.execute(kept)]
        rows.sort(key=lambda r: r.at)
    return rows[:limit]


def _row(names: Sequence[str], values: Sequence[Any], verdict: Verdict) -> MergeRow:
    # str(): the driver's keys are a str subclass, which msgspec does not take as str.
    fields = {str(k): v for k, v in zip(names, values, strict=True)}
    return msgspec.convert({**fields, "verdict": verdict}, MergeRow)
