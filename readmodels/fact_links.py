"""Links between facts in the read models: which hold at a moment, and the facts they reach."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final
from uuid import UUID

import msgspec
from sqlalchemy import BigInteger, BindParameter, Connection, Select, bindparam, or_, select

from apexmem.readmodels.facts import fact_rows, known, rows_statement
from apexmem.readmodels.prepared import Prepared, as_stored, stored_time
from apexmem.readmodels.rows import FactRow
from apexmem.readmodels.tables import fact_links, facts, stored_micros

__all__ = ["LinkRow", "StoredLink", "facts_by_id", "links_of", "links_touching"]

_CHUNK: Final = 400
_TOUCHING: Final = select(fact_links).where(
    or_(
        fact_links.c.source_id.in_(bindparam("ids", expanding=True)),
        fact_links.c.target_id.in_(bindparam("ids", expanding=True)),
    )
)


StoredLink = tuple[str, str, str, float, int]
"""A link as the recall path reads it: source and target ids as stored (hex), link type,
strength and the position of its latest event."""


def _touching(known: bool) -> Select[Any]:
    ids: BindParameter[Any] = bindparam("ids", expanding=True)
    statement = select(
        as_stored(fact_links.c.source_id),
        as_stored(fact_links.c.target_id),
        fact_links.c.link_type,
        fact_links.c.strength,
        fact_links.c.position,
    ).where(
        or_(as_stored(fact_links.c.source_id).in_(ids), as_stored(fact_links.c.target_id).in_(ids))
    )
    if known:
        statement = statement.where(
            stored_time(fact_links.c.recorded_at) <= bindparam("known_at", type_=BigInteger)
        )
    return statement


_TOUCHING_STORED: Final = Prepared(_touching, keyed=True)  # lookups by id: prepared on PostgreSQL


def links_touching(
    connection: Connection, ids: Sequence[str], *, known_at: datetime | None = None
) -> list[StoredLink]:
    """`links_of` on the recall path: ids given and returned as stored (hex), through a
    prepared statement, each link at its latest strength recorded by `known_at`."""
    latest: dict[tuple[str, str, str], StoredLink] = {}
    wanted = list(dict.fromkeys(ids))
    params: dict[str, Any] = {}
    if known_at is not None:
        params["known_at"] = stored_micros(known_at)
    for i in range(0, len(wanted), _CHUNK):
        params["ids"] = wanted[i : i + _CHUNK]
        for row in _TOUCHING_STORED.rows(connection, params, known_at is not None):
            source, target, link_type, strength, position = row
            key = (source, target, link_type)
            held = latest.get(key)
            if held is None or held[4] < position:
                latest[key] = (source, target, link_type, strength, position)
    return sorted(latest.values(), key=lambda link: link[4])


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
