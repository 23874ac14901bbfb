"""Full-text search over entities, fact sentences and messages, on both time axes.

A query is cut into words (`domain.search_text`); a row must hold every word, each as a
prefix ("Gra" finds Graph and GraphQL; "graph OR unrelated" finds neither, since OR is not
an operator here). Scores follow the reference (digest 3.1): each word's bm25 is divided by
that word's best among the candidates, and the words' shares are averaged, so the best hit
of a one-word query scores 1.0 and every score lies in [0, 1]. Recall, which wants any of
a question's words, asks `matching_entities` instead (one query, rarest words first).

The entity index holds current names and summaries: `known_at` keeps the entities the store
knew then (and follows merges and archiving as of then), not the words it knew them by.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final
from uuid import UUID

import msgspec
from sqlalchemy import (
    BigInteger,
    ClauseElement,
    ColumnElement,
    Connection,
    FromClause,
    Select,
    TableClause,
    bindparam,
    case,
    select,
    true,
    type_coerce,
)

from apexmem.domain.search_text import STOPWORDS, search_terms
from apexmem.readmodels.entities import archived_then, roots_of
from apexmem.readmodels.facts import fact_states, seen_by
from apexmem.readmodels.fulltext import (
    Counted,
    among,
    entities_fts,
    facts_fts,
    match_query,
    matches,
    messages_fts,
    rank,
    windows,
)
from apexmem.readmodels.moment import EVERY_FACT, Lens
from apexmem.readmodels.prepared import Prepared, as_stored, id_of, stored_time
from apexmem.readmodels.rows import EntityHit, FactHit, MessageHit
from apexmem.readmodels.tables import ID, entities, facts, messages, stored_micros

__all__ = [
    "entity_counts",
    "matching_entities",
    "search_entities",
    "search_facts",
    "search_messages",
    "visible_entities",
]

_SPARE: Final = 2
"""Candidates fetched per result asked for: merged entities fold into one, and words rerank."""


def _candidates(
    index: TableClause,
    key: ColumnElement[Any],
    *,
    joined: FromClause | None = None,
    where: Sequence[ColumnElement[bool]] = (),
) -> Select[Any]:
    """The best `size` rows of `index` matching `match`: rowid, score, key (and what `joined` adds).

    Without a filter on the joined table the join is left out: it cost as much as the match.
    """
    statement = select(index.c.rowid, rank(index).label("score"), key)
    if joined is not None:
        statement = statement.select_from(joined)
    return (
        statement.where(matches(index), *where)
        .order_by(rank(index).desc(), index.c.rowid)
        .limit(bindparam("size"))
    )


# Built once: SQLAlchemy's statement building took longer than SQLite's answer.
_ENTITY_ID: Final = type_coerce(entities_fts.c.entity_id, ID).label("entity_id")
_ENTITIES_NOW: Final = _candidates(entities_fts, _ENTITY_ID)
_ENTITIES_THEN: Final = _candidates(
    entities_fts,
    _ENTITY_ID,
    joined=entities_fts.join(entities, entities.c.entity_id == entities_fts.c.entity_id),
    where=[entities.c.first_seen <= bindparam("known_at")],
)
_MESSAGE_ID: Final = type_coerce(messages_fts.c.message_id, ID).label("message_id")
_MESSAGES_NOW: Final = _candidates(messages_fts, _MESSAGE_ID)
_MESSAGES_THEN: Final = _candidates(
    messages_fts,
    _MESSAGE_ID,
    joined=messages_fts.join(messages, messages.c.message_id == messages_fts.c.message_id),
    where=[messages.c.recorded_at <= bindparam("known_at")],
)
_MESSAGE_ROWS: Final = select(messages).where(
    messages.c.message_id.in_(bindparam("ids", expanding=True))
)
_SHARES: Final = {
    index.name: select(index.c.rowid, rank(index)).where(matches(index), among(index))
    for index in (entities_fts, facts_fts, messages_fts)
}
_NAMES: Final = select(entities.c.entity_id, entities.c.name, entities.c.entity_type).where(
    entities.c.entity_id.in_(bindparam("ids", expanding=True))
)
_SHOWN_NOW: Final = _NAMES.where(entities.c.archived_at.is_(None))
_SHOWN_THEN: Final = _NAMES.where(~archived_then(bindparam("known_at")))


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
    statement = _ENTITIES_NOW if known_at is None else _ENTITIES_THEN
    params = {"size": limit * _SPARE, "known_at": known_at}
    scored = _scored(connection, entities_fts, statement, terms, params)
    roots = roots_of(connection, [row.entity_id for row, _ in scored], known_at=known_at)
    shown = _shown(connection, set(roots.values()), known_at)
    hits: dict[UUID, EntityHit] = {}
    for row, score in scored:
        root = roots[row.entity_id]
        if root in shown and root not in hits:
            name, entity_type = shown[root]
            hits[root] = EntityHit(entity_id=root, name=name, entity_type=entity_type, score=score)
    return _exact_first(list(hits.values()), terms)[:limit]


def _entity_candidates(known: bool, floor: bool, ceiling: bool) -> ClauseElement:
    """The best `size` entities matching, each as (entity id, score, then its state as
    `_entity_states` gives it, nulls when it has no row): one statement for both."""
    statement = select(
        entities_fts.c.entity_id.label("item"),
        entities_fts.c.rowid.label("at"),
        rank(entities_fts).label("score"),
    )
    if floor:
        statement = statement.where(entities_fts.c.rowid > bindparam("floor"))
    if ceiling:
        statement = statement.where(entities_fts.c.rowid <= bindparam("ceiling"))
    if known:
        seen = entities.alias("seen")
        statement = statement.select_from(
            entities_fts.join(seen, as_stored(seen.c.entity_id) == entities_fts.c.entity_id)
        ).where(stored_time(seen.c.first_seen) <= bindparam("known_at"))
    ranked = (
        statement.where(matches(entities_fts))
        .order_by(rank(entities_fts).desc(), entities_fts.c.rowid)
        .limit(bindparam("size"))
        .subquery()
    )
    return (
        select(ranked.c.item, ranked.c.score, *_state_columns(known))
        .select_from(ranked.outerjoin(entities, as_stored(entities.c.entity_id) == ranked.c.item))
        .order_by(ranked.c.score.desc(), ranked.c.at)
    )


_ENTITY_CANDIDATES: Final = Prepared(_entity_candidates)


def _add_hits(
    connection: Connection,
    scored: list[tuple[str, float]],
    states: list[Any],
    known_at: datetime | None,
    hits: dict[str, EntityHit],
) -> None:
    """Add to `hits` the entities `scored` stand for (merges followed; archived and merged
    away ones, as known at `known_at`, left out), each once, at its best score. `states`:
    their states as `_entity_states` gives them (an entity without a row: all null)."""
    rows = {r[0]: r for r in states if r[0] is not None}
    merged = [UUID(e) for e, r in rows.items() if r[3] is not None]  # rare: follow them as usual
    roots = {e.hex: root for e, root in roots_of(connection, merged, known_at=known_at).items()}
    shown = {e: (r[1], r[2]) for e, r in rows.items() if r[3] is None and not r[4]}
    shown.update((r.hex, n) for r, n in _shown(connection, set(roots.values()), known_at).items())
    for entity, score in scored:
        root = roots[entity].hex if entity in roots else entity
        if root in shown and root not in hits:
            name, entity_type = shown[root]
            hits[root] = EntityHit(
                entity_id=id_of(root), name=name, entity_type=entity_type, score=score
            )


def matching_entities(
    connection: Connection,
    terms: Sequence[str],
    *,
    known_at: datetime | None = None,
    limit: int = 20,
    counts: Mapping[str, int] | None = None,
) -> list[EntityHit]:
    """Entities whose names (display, aliases) or summary hold any of `terms` (or a word they
    begin), best first, as a recall's seeds want them (`counts`: `entity_counts`' for
    `terms` and `limit`, read with other counts; else they are read here).

    bm25 sums over the words matched, so a name holding two of a question's words ranks above
    one holding one; scores are divided by the best's. A word more entities hold than the
    candidates read (`limit * 2`) gives way to rarer ones (`fulltext.rarest`): in "Why did
    Project Mesate fail?" every project holds "project". Alone, such a word is read over its
    newest holders first, then older ones while fewer than `limit` can be shown. Merges are
    followed and archived entities left out, as in `search_entities`.
    """
    if not terms or limit <= 0:
        return []
    size = limit * _SPARE
    known = known_at is not None
    hits: dict[str, EntityHit] = {}
    scale = 0.0
    chosen = windows(connection, entities_fts, terms, budget=size, prefix=True, counts=counts)
    for window in chosen:
        params: dict[str, Any] = {
            "match": window.match,
            "size": size,
            "floor": window.floor,
            "ceiling": window.ceiling,
            "known_at": stored_micros(known_at),
        }
        shape = (known, window.floor is not None, window.ceiling is not None)
        found = _ENTITY_CANDIDATES.rows(connection, params, *shape)
        if not found:
            continue  # none known then in this window: older ones may be
        scale = scale or (found[0][1] if found[0][1] > 0 else 1.0)
        scored = [(row[0], min(1.0, max(0.0, row[1] / scale))) for row in found]
        _add_hits(connection, scored, [row[2:] for row in found], known_at, hits)
        if len(hits) >= limit:
            break
    return _exact_first(list(hits.values()), terms)[:limit]


def entity_counts(terms: Sequence[str], limit: int) -> Counted:
    """What `matching_entities(terms, limit=limit)` counts its words by (`fulltext.Counted`):
    a caller counting other words in one statement counts these with them."""
    return Counted(entities_fts, terms, limit * _SPARE, True)


def _exact_first(hits: list[EntityHit], terms: Sequence[str]) -> list[EntityHit]:
    """Entities whose whole name the question holds ("Person 40") before those it only
    partly matches ("Person 4", "Person 400"), each partial one scored below every exact one."""
    asked = set(terms) | STOPWORDS
    exact = [h for h in hits if set(search_terms(h.name)) <= asked]
    if not exact:
        return hits
    cap = 0.9 * min(h.score for h in exact)
    partial = [msgspec.structs.replace(h, score=min(h.score, cap)) for h in hits if h not in exact]
    return exact + partial


def _state_columns(known: bool) -> list[ColumnElement[Any]]:
    """id, name, type, merged into (or None), archived, of an `entities` row (as known
    at the parameter `known_at` when `known`)."""
    merged: ColumnElement[bool] = entities.c.merged_into.is_not(None)
    archived: ColumnElement[bool] = entities.c.archived_at.is_not(None)
    if known:
        merged = merged & (stored_time(entities.c.merged_at) <= bindparam("known_at"))
        archived = archived_then(bindparam("known_at", type_=BigInteger))
    return [
        as_stored(entities.c.entity_id),
        entities.c.name,
        entities.c.entity_type,
        case((merged, as_stored(entities.c.merged_into))),
        archived,
    ]


def search_facts(
    connection: Connection,
    query: str,
    *,
    lens: Lens = EVERY_FACT,
    limit: int = 20,
) -> list[FactHit]:
    """Fact versions `lens` sees (as `facts_of` does) whose sentence holds every word of
    `query`."""
    terms = search_terms(query)
    if not terms or limit <= 0:
        return []
    statement = _fact_candidates(seen_by(lens), connection.dialect.name == "postgresql")
    scored = _scored(connection, facts_fts, statement, terms, {"size": limit})
    firsts: dict[Any, tuple[Any, float]] = {}
    for r, score in scored:  # one hit a version: a sentence told again after another is twice
        firsts.setdefault(r.fact_id, (r, score))
    scored = list(firsts.values())
    keys = [(r.fact_id, r.position) for r, _ in scored]
    rows = {r.fact_id: r for r in fact_states(connection, keys)}
    return [
        FactHit(fact_id=r.fact_id, score=score, row=rows[r.fact_id])
        for r, score in scored
        if r.fact_id in rows
    ]


def _fact_candidates(where: Sequence[ColumnElement[bool]], lateral: bool) -> Select[Any]:
    """`_candidates` of facts_fts whose version `where` sees in the state that read its
    sentence (a version told in other words has a full-text row per sentence), with the
    state's position and fact_id.

    `lateral` (PostgreSQL): each matching row looks its state up by id. Joined, the
    planner thought a rare name's prefix common (20,849 rows for 45) and hashed every
    believed fact to join them: 300 ms at 1,000,000 facts for what a lookup per row
    answers in a few (a version has one state `where` sees at most).
    """
    same = (facts.c.fact_id == facts_fts.c.fact_id) & (facts.c.fact == facts_fts.c.fact)
    if not lateral:
        joined = facts_fts.join(facts, same)
        statement = _candidates(facts_fts, facts.c.position, joined=joined, where=where)
        return statement.add_columns(facts.c.fact_id)
    state = select(facts.c.position, facts.c.fact_id).where(same, *where).limit(1).lateral()
    statement = _candidates(facts_fts, state.c.position, joined=facts_fts.join(state, true()))
    return statement.add_columns(state.c.fact_id)


def search_messages(
    connection: Connection, query: str, *, known_at: datetime | None = None, limit: int = 20
) -> list[MessageHit]:
    """Messages whose text holds every word of `query` (those recorded by `known_at`)."""
    terms = search_terms(query)
    if not terms or limit <= 0:
        return []
    statement = _MESSAGES_NOW if known_at is None else _MESSAGES_THEN
    params = {"size": limit, "known_at": known_at}
    scored = _scored(connection, messages_fts, statement, terms, params)
    wanted = [r.message_id for r, _ in scored]
    found = {m.message_id: m for m in connection.execute(_MESSAGE_ROWS, {"ids": wanted})}
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
    params: dict[str, Any],
) -> list[tuple[Any, float]]:
    """The rows `statement` (from `_candidates`) gives for `terms`, each with its score.

    Best first, ties in rowid order. With several terms, each term's bm25 over the
    candidates is divided by its best and the shares are averaged.
    """
    candidates = connection.execute(statement, {**params, "match": match_query(terms)}).all()
    if not candidates:
        return []
    shares = [{r[0]: r.score for r in candidates}]
    if len(terms) > 1:
        wanted = [r[0] for r in candidates]
        shares = [
            # Not dict(result): a Result has keys() (its column names), so dict() reads it as
            # a mapping.
            {  # noqa: C416
                key: raw
                for key, raw in connection.execute(
                    _SHARES[index.name], {"match": match_query([t]), "rowids": wanted}
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


def visible_entities(
    connection: Connection, ids: Iterable[UUID], *, known_at: datetime | None = None
) -> dict[UUID, UUID]:
    """Each id -> the entity it stands for (merges followed), for those known and not archived."""
    roots = roots_of(connection, ids, known_at=known_at)
    if known_at is not None:
        known_then = connection.execute(_KNOWN_THEN, {"ids": list(roots), "known_at": known_at})
        roots = {e: roots[e] for e in known_then.scalars()}
    shown = _shown(connection, set(roots.values()), known_at)
    return {e: root for e, root in roots.items() if root in shown}


_KNOWN_THEN: Final = select(entities.c.entity_id).where(
    entities.c.entity_id.in_(bindparam("ids", expanding=True)),
    entities.c.first_seen <= bindparam("known_at"),
)


def _shown(
    connection: Connection, ids: set[UUID], known_at: datetime | None
) -> dict[UUID, tuple[str, str]]:
    """Name and type of the entities among `ids` not archived (as known at `known_at`)."""
    if not ids:
        return {}
    statement = _SHOWN_NOW if known_at is None else _SHOWN_THEN
    found = connection.execute(statement, {"ids": list(ids), "known_at": known_at})
    return {r.entity_id: (r.name, r.entity_type) for r in found}
