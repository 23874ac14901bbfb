"""The read-model questions a recall asks: ranked candidates, visibility, structure, counts.

Every fact question takes a `Lens` as `facts_of` does (a moment on the two time axes, edge
types, fading). Messages have no valid time: a moment's `valid_at` keeps those said by then
(`at <= valid_at`), its `known_at` those recorded by then.

These run on every recall, so most are `Prepared`: ids go in and come out as stored (hex),
and a candidate is a light `FactKey` or `MessageKey` until the fusion has chosen the few
hits whose full rows are read (`hit_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, NamedTuple
from uuid import UUID

from sqlalchemy import (
    ARRAY,
    BigInteger,
    ClauseElement,
    ColumnElement,
    Connection,
    Float,
    Integer,
    Select,
    String,
    and_,
    bindparam,
    case,
    cast,
    func,
    literal,
    null,
    select,
    true,
    union_all,
)

from apexmem.domain.decay import rates_in_force
from apexmem.readmodels.communities import communities_of as community_members_of
from apexmem.readmodels.conversation import speaker_names
from apexmem.readmodels.facts import prepared_believed
from apexmem.readmodels.fulltext import (
    Counted,
    Window,
    counted_terms,
    facts_fts,
    matches,
    messages_fts,
    rank,
    windows,
)
from apexmem.readmodels.hit_rows import hit_rows, message_rows
from apexmem.readmodels.moment import EVERY_FACT, NOW, Lens, Moment
from apexmem.readmodels.prepared import Prepared, as_stored, stored_time
from apexmem.readmodels.tables import (
    community_members,
    decay_rates,
    episodes,
    facts,
    messages,
    retrievals,
    stored_micros,
)

__all__ = [
    "RANKED_ROWS",
    "FactKey",
    "MessageKey",
    "communities_of",
    "edge_structure",
    "fact_key_columns",
    "hit_rows",
    "message_key_columns",
    "message_rows",
    "ranked_facts",
    "ranked_messages",
    "retrieval_counts",
    "said_by",
    "seed_structure",
    "speakers_and_rates",
    "visible_facts",
    "visible_messages",
    "word_counts",
]

_CHUNK: Final = 400
RANKED_ROWS: Final = 500
"""Rows one full-text question ranks at once. bm25 costs a few microseconds a matching row,
and a common word ("work", "use") matches tens of thousands of sentences in a large memory
while telling almost nothing: a question's words are taken rarest first while their
matches add up to this many (the rarest always), and a word commoner than that alone is
ranked over its newest matches first, then over older ones this many at a time while
fewer than the rows wanted can be shown (believed, valid and known when asked)."""
_SPARE: Final = 3
"""Ranked rows read per candidate wanted at first; each further page is four times longer,
up to every ranked row (a common word's matches are mostly superseded versions)."""
_FIRST_FACTS: Final = 4
"""On PostgreSQL the first page of facts is this many times longer (`_in_window`)."""


class FactKey(NamedTuple):
    """A believed fact version as the fusion needs it: enough to tell duplicates and sources
    apart (values as stored: ids in hex)."""

    fact_id: str
    position: int
    subject_id: str
    relation: str
    object_id: str | None
    said: str | None
    """The literal value, or the sentence of a note (a fact without object or value)."""
    edge_type: str
    episode: str | None
    ref: str | None


class MessageKey(NamedTuple):
    """A message as the fusion needs it (its id in hex)."""

    message_id: str
    conversation: str
    ref: str | None
    speaker: str
    """Lowercased, as `speakers_and_rates` gives names."""


def fact_key_columns() -> list[Any]:
    """The columns of a `FactKey`, in order, from the facts table."""
    said = case((facts.c.object_id.is_(None), func.coalesce(facts.c.value, facts.c.fact)))
    return [
        as_stored(facts.c.fact_id),
        facts.c.position,
        as_stored(facts.c.subject_id),
        facts.c.relation,
        as_stored(facts.c.object_id),
        said,
        facts.c.edge_type,
        facts.c.episode,
        facts.c.ref,
    ]


_INDEXES: Final = {"facts": (facts_fts, "fact_id"), "messages": (messages_fts, "message_id")}


def _ranked(name: str, lateral: bool, floor: bool, ceiling: bool, *shape: bool) -> ClauseElement:
    """A window's best `size` rows, each as (id, score, then the columns of its key when
    the state asked for shows it, else nulls): `shape` is a `Lens.shape()` for facts,
    (valid, known) for messages. The check is an outer join on the ranked page, so only
    the page's rows are looked up; `lateral` (PostgreSQL) makes it a lookup per row by
    id, which the planner would otherwise trade for a scan of every fact when the
    tables have no statistics yet."""
    index, key = _INDEXES[name]
    page = select(index.c[key].label("item"), index.c.rowid.label("at"), rank(index).label("score"))
    page = page.where(matches(index))
    if floor:
        page = page.where(index.c.rowid > bindparam("floor"))
    if ceiling:
        page = page.where(index.c.rowid <= bindparam("ceiling"))
    ranked = page.order_by(rank(index).desc(), index.c.rowid).limit(bindparam("size")).subquery()
    if name == "facts":
        shown = select(*fact_key_columns()).where(
            facts.c.fact_id == ranked.c.item, *prepared_believed(*shape)
        )
    else:
        shown = (
            select(*message_key_columns())
            .select_from(messages.join(episodes, episodes.c.episode_id == messages.c.episode_id))
            .where(messages.c.message_id == ranked.c.item, *said_by(*shape))
        )
    if lateral:  # one believed state at most: the limit keeps the planner from unnesting it
        found = shown.limit(1).lateral()
        joined = ranked.outerjoin(found, true())
        columns = list(found.c)
    elif name == "facts":
        joined = ranked.outerjoin(facts, shown.whereclause)
        columns = fact_key_columns()
    else:
        joined = ranked.outerjoin(
            messages, and_(messages.c.message_id == ranked.c.item, *said_by(*shape))
        )
        joined = joined.outerjoin(episodes, episodes.c.episode_id == messages.c.episode_id)
        columns = message_key_columns()
    return (
        select(ranked.c.item, ranked.c.score, *columns)
        .select_from(joined)
        .order_by(ranked.c.score.desc(), ranked.c.at)
    )


_RANKED: Final = Prepared(_ranked)


class _Shown(NamedTuple):
    """What the state asked for keeps of a full-text index: its statement's parameters and
    shape, and how a row's leading columns become a key."""

    params: dict[str, Any]
    shape: tuple[bool, ...]
    key: Callable[..., Any]


def _paged(
    connection: Connection,
    name: str,
    terms: Sequence[str],
    size: int,
    shown: _Shown,
    *,
    counts: Mapping[str, Mapping[str, int]] | None,
) -> list[tuple[Any, float]]:
    """The best `size` ranked rows `shown` keeps, window by window (newest first)."""
    if not terms or size <= 0:
        return []
    found: list[tuple[Any, float]] = []
    index = _INDEXES[name][0]
    counted = None if counts is None else counts[index.name]
    chosen = windows(connection, index, terms, budget=RANKED_ROWS, prefix=False, counts=counted)
    for window in chosen:
        found += _in_window(connection, name, window, size - len(found), shown)
        if len(found) >= size:
            break
    return found


def _in_window(
    connection: Connection, name: str, window: Window, size: int, shown: _Shown
) -> list[tuple[Any, float]]:
    """The best `size` rows of one window that `shown` keeps (a page first, then longer
    ones up to every ranked row of the window while too few are shown)."""
    params = {**shown.params, "match": window.match, "floor": window.floor}
    params["ceiling"] = window.ceiling
    lateral = connection.dialect.name == "postgresql"
    shape = (lateral, window.floor is not None, window.ceiling is not None, *shown.shape)
    # An older window is asked for only when the newer ones showed too few rows, and on
    # PostgreSQL each longer page is one more round trip: there it is ranked whole at once
    # (the same rows come first either way).
    page = RANKED_ROWS if lateral and window.ceiling is not None else size * _SPARE
    if lateral and name == "facts":
        # Half the questions at 100,000 facts found too few facts shown in a first page
        # of 3x (superseded versions hold most sentences) and asked again, which ranks
        # every match again: there a page of 12x costs what one of 3x does.
        page = min(page * _FIRST_FACTS, RANKED_ROWS)
    while True:
        rows = _RANKED.rows(connection, {**params, "size": page}, name, *shape)
        # A version told in other words has a row per sentence: it counts once, at its best.
        firsts: dict[str, Any] = {}
        for row in rows:
            if row[2] is not None:
                firsts.setdefault(row[0], row)
        if len(firsts) >= size or len(rows) < page or page >= RANKED_ROWS:
            break
        page = min(page * 4, RANKED_ROWS)
    return [(shown.key(*row[2:]), row[1]) for row in firsts.values()][:size]


def word_counts(
    connection: Connection, terms: Sequence[str], *, also: Counted | None = None
) -> dict[str, dict[str, int]]:
    """The sentences and the messages holding each of `terms` (up to `RANKED_ROWS` + 1),
    in one statement: what `ranked_facts` and `ranked_messages` choose their words by,
    when given them (`counts`); with `also`'s counts (`search.entity_counts`: what a
    recall's seeds are found by) in the same statement."""
    indexes = [facts_fts, messages_fts]
    return counted_terms(connection, indexes, terms, budget=RANKED_ROWS, prefix=False, also=also)


def ranked_facts(
    connection: Connection,
    terms: Sequence[str],
    *,
    lens: Lens = EVERY_FACT,
    size: int = 20,
    counts: Mapping[str, Mapping[str, int]] | None = None,
) -> list[tuple[FactKey, float]]:
    """Facts `lens` sees whose sentence holds any of `terms`, by BM25 (best first), with it.

    Within `RANKED_ROWS`: the rarest of the words decide (see there); `counts`: those
    `word_counts` read for `terms` (else they are read).
    """
    shown = _Shown(lens.params(), lens.shape(), FactKey)
    return _paged(connection, "facts", terms, size, shown, counts=counts)


def ranked_messages(
    connection: Connection,
    terms: Sequence[str],
    *,
    moment: Moment = NOW,
    size: int = 20,
    counts: Mapping[str, Mapping[str, int]] | None = None,
) -> list[tuple[MessageKey, float]]:
    """Messages of `moment` holding any of `terms`, by BM25 (best first), with it (within
    `RANKED_ROWS`; `counts` as `ranked_facts` takes them)."""
    shape = (moment.valid_at is not None, moment.known_at is not None)
    shown = _Shown(moment.stored(), shape, MessageKey)
    return _paged(connection, "messages", terms, size, shown, counts=counts)


def _visible_facts(
    lateral: bool, valid: bool, known: bool, typed: bool, fading: bool
) -> ClauseElement:
    """The `FactKey`s of the versions among `ids` the state sees; `lateral` (PostgreSQL)
    looks each id up by its key, which the planner would otherwise trade for a scan of the
    believed facts when the tables have no statistics yet."""
    believed = prepared_believed(valid, known, typed, fading)
    if not lateral:
        return select(*fact_key_columns()).where(
            as_stored(facts.c.fact_id).in_(bindparam("ids", expanding=True)), *believed
        )
    ids = bindparam("ids", type_=ARRAY(String))
    asked = func.unnest(ids).table_valued("id").render_derived(name="asked")
    # One believed state at most: the limit keeps the planner from unnesting the lookup.
    one = select(*fact_key_columns()).where(facts.c.fact_id == asked.c.id, *believed).limit(1)
    found = one.lateral()
    return select(*found.c).select_from(asked.join(found, true()))


_VISIBLE_FACTS: Final = Prepared(_visible_facts, keyed=True)


def visible_facts(
    connection: Connection,
    ids: Iterable[str],
    *,
    lens: Lens = EVERY_FACT,
) -> dict[str, FactKey]:
    """The fact versions among `ids` (hex) that `lens` sees."""
    wanted = list(dict.fromkeys(ids))
    found: dict[str, FactKey] = {}
    params = lens.params()
    shape = (connection.dialect.name == "postgresql", *lens.shape())
    for i in range(0, len(wanted), _CHUNK):
        params["ids"] = wanted[i : i + _CHUNK]
        found.update((r[0], FactKey(*r)) for r in _VISIBLE_FACTS.rows(connection, params, *shape))
    return found


def message_key_columns() -> list[Any]:
    """The columns of a `MessageKey`, in order, from messages joined with episodes."""
    return [
        as_stored(messages.c.message_id),
        episodes.c.conversation,
        messages.c.ref,
        func.lower(messages.c.speaker),
    ]


def said_by(valid: bool, known: bool) -> list[ColumnElement[bool]]:
    """Messages said by `valid_at` and recorded by `known_at` (when `valid`, `known`)."""
    found = []
    if valid:
        found.append(stored_time(messages.c.at) <= bindparam("valid_at"))
    if known:
        found.append(stored_time(messages.c.recorded_at) <= bindparam("known_at"))
    return found


def _visible_messages(valid: bool, known: bool) -> ClauseElement:
    return (
        select(*message_key_columns())
        .select_from(messages.join(episodes, episodes.c.episode_id == messages.c.episode_id))
        .where(
            as_stored(messages.c.message_id).in_(bindparam("ids", expanding=True)),
            *said_by(valid, known),
        )
    )


_VISIBLE_MESSAGES: Final = Prepared(_visible_messages, keyed=True)


def visible_messages(
    connection: Connection,
    ids: Iterable[str],
    *,
    moment: Moment = NOW,
) -> dict[str, MessageKey]:
    """The messages among `ids` (hex) said by the moment's `valid_at` and recorded by its
    `known_at` (when given)."""
    wanted = list(dict.fromkeys(ids))
    found: dict[str, MessageKey] = {}
    params: dict[str, Any] = moment.stored()
    shape = (moment.valid_at is not None, moment.known_at is not None)
    for i in range(0, len(wanted), _CHUNK):
        params["ids"] = wanted[i : i + _CHUNK]
        for row in _VISIBLE_MESSAGES.rows(connection, params, *shape):
            found[row[0]] = MessageKey(*row)
    return found


def _end_counts(valid: bool, known: bool, typed: bool, fading: bool) -> list[Select[Any]]:
    """Edges of each of `ids` by edge type, counted at each end: one select per end."""
    counts: list[Select[Any]] = []
    for end in ("subject_id", "object_id"):
        column = as_stored(facts.c[end])
        counts.append(
            select(column, facts.c.edge_type, func.count())
            .where(
                column.in_(bindparam("ids", expanding=True)),
                facts.c.object_id.is_not(None),
                *prepared_believed(valid, known, typed, fading),
            )
            .group_by(column, facts.c.edge_type)
        )
    return counts


def edge_structure(
    connection: Connection,
    ids: Sequence[UUID],
    *,
    lens: Lens = EVERY_FACT,
) -> dict[UUID, tuple[int, int]]:
    """(degree, distinct edge types) of each entity over the edges `lens` sees.

    Counted in SQL, per end and edge type (an edge from an entity to itself cannot exist).
    """
    return seed_structure(connection, ids, lens=lens)[0]


def _seed_structure(valid: bool, known: bool, typed: bool, fading: bool) -> ClauseElement:
    """`_end_counts`' rows, then each of `ids`' live community as (entity, community, -1)."""
    live = select(
        as_stored(community_members.c.entity_id),
        as_stored(community_members.c.community_id),
        literal(-1, Integer),
    ).where(
        as_stored(community_members.c.entity_id).in_(bindparam("ids", expanding=True)),
        community_members.c.left_at.is_(None),
    )
    return union_all(*_end_counts(valid, known, typed, fading), live)


_SEED_STRUCTURE: Final = Prepared(_seed_structure, keyed=True)


def seed_structure(
    connection: Connection, ids: Sequence[UUID], *, lens: Lens = EVERY_FACT
) -> tuple[dict[UUID, tuple[int, int]], dict[UUID, UUID]]:
    """`edge_structure` and `communities_of` of `ids` in one statement (what a recall's
    seeds are chosen by: two round trips were one more than needed on PostgreSQL)."""
    wanted = {e.hex: e for e in ids}
    degree: dict[str, int] = dict.fromkeys(wanted, 0)
    kinds: dict[str, set[str]] = {e: set() for e in wanted}
    communities: dict[UUID, UUID] = {}
    params = lens.params()
    shape = lens.shape()
    listed = list(wanted)
    for i in range(0, len(listed), _CHUNK):
        params["ids"] = listed[i : i + _CHUNK]
        for entity, other, count in _SEED_STRUCTURE.rows(connection, params, *shape):
            if count < 0:
                communities[wanted[entity]] = UUID(hex=other)
            else:
                degree[entity] += count
                kinds[entity].add(other)
    structure = {wanted[e]: (degree[e], len(kinds[e])) for e in wanted}
    return structure, communities


def _speakers_and_rates(speakers: bool, known: bool) -> ClauseElement:
    """The speakers (lowercased) among `names` as (0, name, null, null), when `speakers`,
    then the decay rates set (by `known_at` when `known`) as (1, edge type, rate, position),
    in position order."""
    rates = select(
        literal(1, Integer).label("tag"),
        decay_rates.c.edge_type.label("name"),
        decay_rates.c.rate.label("rate"),
        decay_rates.c.position.label("at"),
    )
    if known:
        rates = rates.where(stored_time(decay_rates.c.set_at) <= bindparam("known_at"))
    if not speakers:
        return rates.order_by(decay_rates.c.position)
    spoken = func.lower(messages.c.speaker)
    named = (
        select(
            literal(0, Integer).label("tag"),
            spoken.label("name"),
            cast(null(), Float).label("rate"),
            cast(null(), BigInteger).label("at"),
        )
        .where(spoken.in_(bindparam("names", expanding=True)))
        .group_by(spoken)
    )
    both = union_all(named, rates).subquery()
    return select(*both.c).order_by(both.c.tag, both.c.at)


_SPEAKERS_AND_RATES: Final = Prepared(_speakers_and_rates, keyed=True)


def speakers_and_rates(
    connection: Connection,
    words: Sequence[str] | None,
    *,
    known_at: datetime | None,
    default: float,
) -> tuple[set[str], dict[str, float]]:
    """The speakers (lowercased) among `conversation.speaker_names(words)` (none when `words`
    is None) and `decay.rates_at(known_at)`, in one statement: both are asked before anything
    else."""
    names = [] if words is None else speaker_names(words)
    params: dict[str, Any] = {"known_at": stored_micros(known_at), "names": names}
    shape = (bool(names), known_at is not None)
    speakers: set[str] = set()
    rates: list[tuple[str, float]] = []
    for tag, name, rate, _ in _SPEAKERS_AND_RATES.rows(connection, params, *shape):
        if tag == 0:
            speakers.add(name)
        else:
            rates.append((name, rate))
    return speakers, rates_in_force(dict(rates), default)


def communities_of(connection: Connection, ids: Sequence[UUID]) -> dict[UUID, UUID]:
    """The live community of each entity that has one, for the seed cap (see communities)."""
    return community_members_of(connection, ids)


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
