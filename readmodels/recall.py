"""The read-model questions a recall asks: ranked candidates, visibility, structure, counts.

Every question takes the two time axes as `facts_of` does: `valid_at` (open-ended facts
when None) and `known_at` (what the store believes now when None). Messages have no valid
time: `valid_at` keeps those said by then (`at <= valid_at`), `known_at` those recorded by then.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Final
from uuid import UUID

import msgspec
from sqlalchemy import (
    ColumnElement,
    Connection,
    String,
    Uuid,
    bindparam,
    func,
    select,
    type_coerce,
)

from apexmem.readmodels.facts import believed, fact_rows, fact_states
from apexmem.readmodels.facts import rows_statement as facts_statement
from apexmem.readmodels.fulltext import any_query, facts_fts, matches, messages_fts, rank
from apexmem.readmodels.rows import FactRow, MessageRow
from apexmem.readmodels.tables import episodes, facts, messages, retrievals

__all__ = [
    "communities_of",
    "edge_structure",
    "fact_positions",
    "ranked_facts",
    "ranked_messages",
    "retrieval_counts",
    "visible_facts",
    "visible_messages",
]

_CHUNK: Final = 400

_MESSAGE_ROWS: Final = select(
    messages.c.message_id,
    messages.c.episode_id,
    episodes.c.conversation,
    messages.c.speaker,
    messages.c.text,
    messages.c.at,
    messages.c.ref,
    messages.c.recorded_at,
    messages.c.position,
).select_from(messages.join(episodes, episodes.c.episode_id == messages.c.episode_id))


def _message_filters(
    valid_at: datetime | None, known_at: datetime | None
) -> list[ColumnElement[bool]]:
    where = []
    if valid_at is not None:
        where.append(messages.c.at <= valid_at)
    if known_at is not None:
        where.append(messages.c.recorded_at <= known_at)
    return where


def ranked_facts(
    connection: Connection,
    terms: Sequence[str],
    *,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    edge_types: Sequence[str] = (),
    size: int = 20,
) -> list[tuple[FactRow, float]]:
    """Believed facts whose sentence holds any of `terms`, by BM25 (best first), with it.

    The index alone is asked first (a common word matches thousands of sentences, and
    joining each to its versions cost more than the ranking); when too few of its best
    are visible at the times asked, the joined query answers instead.
    """
    if not terms or size <= 0:
        return []
    match = any_query(terms)
    page = size * _SPARE
    best = connection.execute(_FACTS_RANKED, {"match": match, "size": page}).all()
    shown = visible_facts(
        connection,
        [r.fact_id for r in best],
        valid_at=valid_at,
        known_at=known_at,
        edge_types=edge_types,
    )
    if len(shown) >= size or len(best) < page:
        ranked = [(shown[r.fact_id], r.score) for r in best if r.fact_id in shown]
        return ranked[:size]
    statement = (
        select(facts.c.fact_id, facts.c.position, rank(facts_fts).label("score"))
        .select_from(facts_fts.join(facts, facts.c.fact_id == facts_fts.c.fact_id))
        .where(matches(facts_fts), *believed(valid_at, known_at, edge_types))
        .order_by(rank(facts_fts).desc(), facts_fts.c.rowid)
        .limit(size)
    )
    found = connection.execute(statement, {"match": match}).all()
    scores = {r.fact_id: r.score for r in found}
    rows = fact_states(connection, [(r.fact_id, r.position) for r in found])
    return [(row, scores[row.fact_id]) for row in rows]


_SPARE: Final = 3
"""Index rows read per fact wanted before falling back to the joined query."""
_FACTS_RANKED: Final = (
    select(type_coerce(facts_fts.c.fact_id, Uuid).label("fact_id"), rank(facts_fts).label("score"))
    .where(matches(facts_fts))
    .order_by(rank(facts_fts).desc(), facts_fts.c.rowid)
    .limit(bindparam("size"))
)
_MESSAGE_ID: Final = type_coerce(messages_fts.c.message_id, Uuid)


def ranked_messages(
    connection: Connection,
    terms: Sequence[str],
    *,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    size: int = 20,
) -> list[tuple[MessageRow, float]]:
    """Messages holding any of `terms`, by BM25 (best first), with it."""
    if not terms or size <= 0:
        return []
    filters = _message_filters(valid_at, known_at)
    statement = select(_MESSAGE_ID.label("message_id"), rank(messages_fts).label("score"))
    if filters:
        statement = statement.select_from(
            messages_fts.join(messages, messages.c.message_id == messages_fts.c.message_id)
        )
    statement = (
        statement.where(matches(messages_fts), *filters)
        .order_by(rank(messages_fts).desc(), messages_fts.c.rowid)
        .limit(size)
    )
    found = connection.execute(statement, {"match": any_query(terms)}).all()
    rows = visible_messages(connection, [r.message_id for r in found])
    return [(rows[r.message_id], r.score) for r in found if r.message_id in rows]


def visible_facts(
    connection: Connection,
    ids: Iterable[UUID],
    *,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    edge_types: Sequence[str] = (),
) -> dict[UUID, FactRow]:
    """The fact versions among `ids` believed, known and valid at the times asked."""
    wanted = list(dict.fromkeys(ids))
    found: dict[UUID, FactRow] = {}
    where = believed(valid_at, known_at, edge_types)
    for i in range(0, len(wanted), _CHUNK):
        statement = facts_statement().where(facts.c.fact_id.in_(wanted[i : i + _CHUNK]), *where)
        found.update((row.fact_id, row) for row in fact_rows(connection, statement))
    return found


def visible_messages(
    connection: Connection,
    ids: Iterable[UUID],
    *,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
) -> dict[UUID, MessageRow]:
    """The messages among `ids` said by `valid_at` and recorded by `known_at` (when given)."""
    wanted = list(dict.fromkeys(ids))
    found: dict[UUID, MessageRow] = {}
    where = _message_filters(valid_at, known_at)
    for i in range(0, len(wanted), _CHUNK):
        statement = _MESSAGE_ROWS.where(messages.c.message_id.in_(wanted[i : i + _CHUNK]), *where)
        for row in connection.execute(statement):
            found[row.message_id] = msgspec.convert(row, MessageRow, from_attributes=True)
    return found


def edge_structure(
    connection: Connection,
    ids: Sequence[UUID],
    *,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    edge_types: Sequence[str] = (),
) -> dict[UUID, tuple[int, int]]:
    """(degree, distinct edge types) of each entity over the believed edges in play.

    Counted in SQL, per end and edge type (an edge from an entity to itself cannot exist).
    """
    wanted = {e.hex: e for e in ids}
    degree: dict[str, int] = dict.fromkeys(wanted, 0)
    kinds: dict[str, set[str]] = {e: set() for e in wanted}
    where = [*believed(valid_at, known_at, edge_types), facts.c.object_id.is_not(None)]
    listed = list(wanted)
    for end in (facts.c.subject_id, facts.c.object_id):
        raw = type_coerce(end, String)
        for i in range(0, len(listed), _CHUNK):
            statement = (
                select(raw, facts.c.edge_type, func.count())
                .where(raw.in_(listed[i : i + _CHUNK]), *where)
                .group_by(raw, facts.c.edge_type)
            )
            for entity, edge_type, count in connection.execute(statement):
                degree[entity] += count
                kinds[entity].add(edge_type)
    return {wanted[e]: (degree[e], len(kinds[e])) for e in wanted}


def communities_of(connection: Connection, ids: Sequence[UUID]) -> dict[UUID, UUID]:
    """The community of each entity, for the seed cap.

    A hook until communities are projected (the graph-upkeep work): no entity has one yet,
    so the cap changes nothing.
    """
    del connection, ids
    return {}


_COUNTS: Final = select(retrievals.c.fact_id, retrievals.c.count).where(
    retrievals.c.fact_id.in_(bindparam("ids", expanding=True))
)


def retrieval_counts(connection: Connection, ids: Iterable[UUID]) -> dict[UUID, float]:
    """How often recalls returned each fact version (0 when never)."""
    wanted = list(dict.fromkeys(ids))
    counts: dict[UUID, float] = {}
    for i in range(0, len(wanted), _CHUNK):
        counts.update(
            (r.fact_id, r[1]) for r in connection.execute(_COUNTS, {"ids": wanted[i : i + _CHUNK]})
        )
    return counts


_POSITIONS: Final = (
    select(facts.c.fact_id, facts.c.position)
    .where(facts.c.fact_id.in_(bindparam("ids", expanding=True)))
    .order_by(facts.c.position)
)


def fact_positions(connection: Connection, ids: Iterable[UUID]) -> dict[UUID, list[int]]:
    """The log positions of the events that gave each fact version a state, oldest first."""
    wanted = list(dict.fromkeys(ids))
    positions: dict[UUID, list[int]] = {f: [] for f in wanted}
    for i in range(0, len(wanted), _CHUNK):
        for row in connection.execute(_POSITIONS, {"ids": wanted[i : i + _CHUNK]}):
            positions[row.fact_id].append(row.position)
    return positions
