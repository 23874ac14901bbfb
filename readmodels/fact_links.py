"""Links between facts in the read models: which hold at a moment, and the facts they reach."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final
from uuid import UUID

import msgspec
from sqlalchemy import Connection, bindparam, or_, select

from apexmem.readmodels.facts import fact_rows, known, rows_statement
from apexmem.readmodels.rows import FactRow
from apexmem.readmodels.tables import fact_links, facts

__all__ = ["LinkRow", "facts_by_id", "links_of"]

_CHUNK: Final = 400
_TOUCHING: Final = select(fact_links).where(
    or_(
        fact_links.c.source_id.in_(bindparam("ids", expanding=True)),
        fact_links.c.target_id.in_(bindparam("ids", expanding=True)),
    )
)


class LinkRow(msgspec.Struct, frozen=True, kw_only=True):
    """A link between two fact versions, as its latest event recorded it."""

    source_id: UUID
    target_id: UUID
    link_type: str
    strength: float
    origin: str
    position: int
    recorded_at: datetime


def links_of(
    connection: Connection, fact_ids: Sequence[UUID], *, known_at: datetime | None = None
) -> list[LinkRow]:
    """The links from or to any of these facts, each at its latest strength recorded by
    `known_at` (now when None), in the order they were last told."""
    latest: dict[tuple[UUID, UUID, str], LinkRow] = {}
    ids = list(dict.fromkeys(fact_ids))
    for i in range(0, len(ids), _CHUNK):
        statement = _TOUCHING
        if known_at is not None:
            statement = statement.where(fact_links.c.recorded_at <= known_at)
        for row in connection.execute(statement, {"ids": ids[i : i + _CHUNK]}):
            link = msgspec.convert(row, LinkRow, from_attributes=True)
            key = (link.source_id, link.target_id, link.link_type)
            held = latest.get(key)
            if held is None or held.position < link.position:
                latest[key] = link
    return sorted(latest.values(), key=lambda r: r.position)


def facts_by_id(
    connection: Connection, fact_ids: Sequence[UUID], *, known_at: datetime | None = None
) -> dict[UUID, FactRow]:
    """The state of each of these fact versions the store held at `known_at` (now when
    None), whatever its standing; versions it did not know yet are left out."""
    found: dict[UUID, FactRow] = {}
    ids = list(dict.fromkeys(fact_ids))
    for i in range(0, len(ids), _CHUNK):
        statement = rows_statement().where(
            facts.c.fact_id.in_(ids[i : i + _CHUNK]), known(known_at)
        )
        found.update((row.fact_id, row) for row in fact_rows(connection, statement))
    return found
