"""Full-text search over entities, fact sentences and messages, on both time axes.

A query is cut into words (`domain.search_text`); a row must hold every word, each as a
prefix ("Gra" finds Graph and GraphQL; "graph OR unrelated" finds neither, since OR is not
an operator here). Scores follow the reference (digest 3.1): each word's bm25 is divided by
that word's best among the candidates, and the words' shares are averaged, so the best hit
of a one-word query scores 1.0 and every score lies in [0, 1]. Recall, which wants any of
a question's words, searches word by word and merges.

The entity index holds current names and summaries: `known_at` keeps the entities the store
knew then (and follows merges and archiving as of then), not the words it knew them by.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Final
from uuid import UUID

from sqlalchemy import Connection, Select, TableClause, Uuid, or_, select, type_coerce

from apexmem.domain.search_text import search_terms
from apexmem.readmodels.facts import fact_states, known, valid
from apexmem.readmodels.fulltext import (
    among,
    entities_fts,
    facts_fts,
    matches,
    messages_fts,
    rank,
)
from apexmem.readmodels.rows import EntityHit, FactHit, MessageHit
from apexmem.readmodels.tables import entities, facts, messages

__all__ = ["search_entities", "search_facts", "search_messages"]

_SPARE: Final = 2
"""Candidates fetched per result asked for: merged entities fold into one, and words rerank."""


def search_entities(
    connection: Connection, query: str, *, known_at: datetime | None = None, limit: int = 20
) -> list[EntityHit]:
    """Entities whose names (display, aliases) or summary hold every word of `query`.

    Names weigh 10x the summary. A merged entity's hit counts for the entity it was merged
    into; archived entities are left out.
    """
    terms = search_terms(query)
    if not terms or limit <= 0:
        return []
    entity_id = type_coerce(entities_fts.c.entity_id, Uuid).label("entity_id")
    statement = select(entities_fts.c.rowid, rank(entities_fts).label("score"), entity_id)
    if known_at is not None:  # the join costs as much as the match: only when it filters
        statement = statement.join_from(
            entities_fts, entities, entities.c.entity_id == entities_fts.c.entity_id
        ).where(entities.c.first_seen <= known_at)
    scored = _scored(connection, entities_fts, statement, terms, limit * _SPARE)
    roots = _roots(connection, [row.entity_id for row, _ in scored], known_at)
    shown = _shown(connection, set(roots.values()), known_at)
    hits: dict[UUID, EntityHit] = {}
    for row, score in scored:
        root = roots[row.entity_id]
        if root in shown and root not in hits:
            name, entity_type = shown[root]
            hits[root] = EntityHit(entity_id=root, name=name, entity_type=entity_type, score=score)
    return list(hits.values())[:limit]


def search_facts(
    connection: Connection,
    query: str,
    *,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    edge_types: Sequence[str] = (),
    limit: int = 20,
) -> list[FactHit]:
    """Believed fact versions whose sentence holds every word of `query`.

    The time axes are those of `facts_of`: valid at `valid_at` (open-ended when None),
    in the state the store held at `known_at` (now when None).
    """
    terms = search_terms(query)
    if not terms or limit <= 0:
        return []
    where = [facts.c.standing == "believed", known(known_at), valid(valid_at)]
    if edge_types:
        where.append(facts.c.edge_type.in_(list(edge_types)))
    statement = (
        select(facts_fts.c.rowid, rank(facts_fts).label("score"), facts.c.fact_id, facts.c.position)
        .select_from(facts_fts.join(facts, facts.c.fact_id == facts_fts.c.fact_id))
        .where(*where)
    )
    scored = _scored(connection, facts_fts, statement, terms, limit * _SPARE)[:limit]
    rows = {
        r.fact_id: r for r in fact_states(connection, [(r.fact_id, r.position) for r, _ in scored])
    }
    return [
        FactHit(fact_id=r.fact_id, score=score, row=rows[r.fact_id])
        for r, score in scored
        if r.fact_id in rows
    ]


def search_messages(
    connection: Connection, query: str, *, known_at: datetime | None = None, limit: int = 20
) -> list[MessageHit]:
    """Messages whose text holds every word of `query` (those recorded by `known_at`)."""
    terms = search_terms(query)
    if not terms or limit <= 0:
        return []
    message_id = type_coerce(messages_fts.c.message_id, Uuid).label("message_id")
    statement = select(messages_fts.c.rowid, rank(messages_fts).label("score"), message_id)
    if known_at is not None:
        statement = statement.join_from(
            messages_fts, messages, messages.c.message_id == messages_fts.c.message_id
        ).where(messages.c.recorded_at <= known_at)
    scored = _scored(connection, messages_fts, statement, terms, limit)
    wanted = [r.message_id for r, _ in scored]
    found = {
        m.message_id: m
        for m in connection.execute(select(messages).where(messages.c.message_id.in_(wanted)))
    }
    return [
        MessageHit(
            message_id=m.message_id,
            episode_id=m.episode_id,
            speaker=m.speaker,
            text=m.text,
            at=m.at,
            score=score,
        )
        for r, score in scored
        if (m := found.get(r.message_id)) is not None
    ]


def _scored(
    connection: Connection,
    index: TableClause,
    statement: Select[Any],
    terms: list[str],
    size: int,
) -> list[tuple[Any, float]]:
    """The best `size` rows holding every term, each with its score, best first.

    `statement` selects the index's rowid first and its rank as `score`, filtered as the
    question asks; the terms' match is added here.
    """
    rowid = index.c.rowid
    candidates = connection.execute(
        statement.where(matches(index, terms)).order_by(rank(index).desc(), rowid).limit(size)
    ).all()
    if not candidates:
        return []
    shares = [{r[0]: r.score for r in candidates}]
    if len(terms) > 1:
        wanted = [r[0] for r in candidates]
        # Not dict(result): a Result has keys() (its column names), so dict() reads it as a
        # mapping.
        shares = [
            {  # noqa: C416
                key: raw
                for key, raw in connection.execute(
                    select(rowid, rank(index)).where(matches(index, [t]), among(index, wanted))
                )
            }
            for t in terms
        ]
    for share in shares:
        best = max(share.values())
        scale = best if best > 0 else 1.0
        for key, raw in share.items():
            share[key] = min(1.0, max(0.0, raw / scale))
    scored = [(r, sum(s.get(r[0], 0.0) for s in shares) / len(shares)) for r in candidates]
    scored.sort(key=lambda item: (-item[1], item[0][0]))
    return scored


def _roots(
    connection: Connection, ids: Iterable[UUID], known_at: datetime | None
) -> dict[UUID, UUID]:
    """Each id -> the entity it was merged into (as known at `known_at`), followed to the end."""
    wanted = list(dict.fromkeys(ids))
    into: dict[UUID, UUID] = {}
    asked = set(wanted)
    pending = set(wanted)
    while pending:
        statement = select(entities.c.entity_id, entities.c.merged_into).where(
            entities.c.entity_id.in_(list(pending)), entities.c.merged_into.is_not(None)
        )
        if known_at is not None:
            statement = statement.where(entities.c.merged_at <= known_at)
        moved = {r.entity_id: r.merged_into for r in connection.execute(statement)}
        into.update(moved)
        pending = set(moved.values()) - asked
        asked |= pending

    def root(entity: UUID) -> UUID:
        seen = {entity}
        while (entity := into.get(entity, entity)) not in seen:
            seen.add(entity)
        return entity

    return {e: root(e) for e in wanted}


def _shown(
    connection: Connection, ids: set[UUID], known_at: datetime | None
) -> dict[UUID, tuple[str, str]]:
    """Name and type of the entities among `ids` not archived (as known at `known_at`)."""
    if not ids:
        return {}
    statement = select(entities.c.entity_id, entities.c.name, entities.c.entity_type).where(
        entities.c.entity_id.in_(list(ids))
    )
    if known_at is None:
        statement = statement.where(entities.c.archived_at.is_(None))
    else:
        statement = statement.where(
            or_(entities.c.archived_at.is_(None), entities.c.archived_at > known_at)
        )
    return {r.entity_id: (r.name, r.entity_type) for r in connection.execute(statement)}
