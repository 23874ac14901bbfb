"""Full-text indexes over the graph tables: SQLite FTS5, every engine-specific piece in this module.

Three FTS5 tables (unicode61 tokenizer, diacritics removed, prefix indexes for 2 and 3
characters), each row keyed by the log position of the event that created its subject:

- `entities_fts`: display name, the entity's other names (alias display forms, in claim
  order) and summary, one row per entity;
- `facts_fts`: the sentence of each fact version, once (its first state's row), and each
  other sentence a reinforcement gave it (that state's row: older sentences stay found);
- `messages_fts`: each message's text.

Each also holds the gram text (`domain.search_text.gram_text`) of what it indexes, so
that a word of a script written without spaces (北京 in 我住在北京) is found: the tokenizer
keeps such a run as one word. `name_grams` weighs as the names, `summary_grams` and
`grams` as the text. The grams are cut in Python, the same for SQLite and PostgreSQL;
empty for English text, which therefore costs nothing more to index or search.

The projection writes them (`index`, called by apply.py) in the transaction that writes
the graph tables, so every writer (the incremental projection, a rebuild, a replay) keeps
them in step and a crash cannot leave one without the other. `ensure` creates and fills
them from the graph tables when they are missing (a store written before they existed).
SQL triggers on the graph tables were the other way, and were tried first (see `index`
for why they went). A PostgreSQL variant replaces this module (tsvector columns).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple
from uuid import UUID

from sqlalchemy import (
    ClauseElement,
    ColumnElement,
    Connection,
    TableClause,
    bindparam,
    column,
    func,
    literal_column,
    select,
    table,
)

from apexmem.domain.search_text import MIN_TERM_BYTES, gram_text
from apexmem.readmodels import fulltext_pg
from apexmem.readmodels.bulk import run_many
from apexmem.readmodels.fulltext_pg import per_dialect
from apexmem.readmodels.prepared import Prepared

__all__ = [
    "MOST_WINDOWS",
    "TABLES",
    "Counted",
    "Rows",
    "Window",
    "among",
    "any_query",
    "contents",
    "counted_terms",
    "drop",
    "ensure",
    "entities_fts",
    "facts_fts",
    "fill_grams",
    "index",
    "match_query",
    "matches",
    "messages_fts",
    "parameters",
    "rank",
    "rarest",
    "term_counts",
    "windows",
]

_OPTIONS: Final = "tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'"
_TEXT_OPTIONS: Final = "tokenize = 'porter unicode61 remove_diacritics 2', prefix = '2 3'"
"""Running text (fact sentences, messages) is also stemmed: "painted" finds "painting".
Names are not: a name is matched as written, or as a prefix."""

entities_fts: Final = table(
    "entities_fts", column("rowid"), column("entity_id"), column("name"), column("summary")
)
facts_fts: Final = table("facts_fts", column("rowid"), column("fact_id"), column("fact"))
messages_fts: Final = table("messages_fts", column("rowid"), column("message_id"), column("text"))

_WEIGHTS: Final[dict[str, tuple[float, ...]]] = {
    # name and other names 10x the summary (DESIGN 5); the unindexed id column weighs nothing.
    "entities_fts": (0.0, 10.0, 10.0, 1.0, 10.0, 1.0),
    "facts_fts": (0.0, 1.0, 1.0),
    "messages_fts": (0.0, 1.0, 1.0),
}

_CREATE_TABLES: Final = {
    "entities_fts": f"CREATE VIRTUAL TABLE entities_fts USING fts5("
    f"entity_id UNINDEXED, name, aliases, summary, name_grams, summary_grams, {_OPTIONS})",
    "facts_fts": "CREATE VIRTUAL TABLE facts_fts USING fts5("
    f"fact_id UNINDEXED, fact, grams, {_TEXT_OPTIONS})",
    "messages_fts": f"CREATE VIRTUAL TABLE messages_fts USING fts5("
    f"message_id UNINDEXED, text, grams, {_TEXT_OPTIONS})",
}
TABLES: Final = tuple(_CREATE_TABLES)

_INSERT_ENTITY: Final = (
    "INSERT INTO entities_fts(rowid, entity_id, name, aliases, summary, name_grams, summary_grams)"
    " VALUES (?, ?, ?, '', ?, ?, ?)"
)
# The name an entity is observed under is claimed as its first alias: it is in `name` already.
_ADD_ALIAS: Final = """
    UPDATE entities_fts SET aliases = ltrim(aliases || ' ' || ?1),
        name_grams = CASE WHEN ?3 = '' THEN name_grams ELSE ltrim(name_grams || ' ' || ?3) END
    WHERE rowid = (SELECT position FROM entities WHERE entity_id = ?2 AND name <> ?1)"""
_SET_SUMMARY: Final = """
    UPDATE entities_fts SET summary = ?1, summary_grams = ?3
    WHERE rowid = (SELECT position FROM entities WHERE entity_id = ?2)"""
_INSERT_FACT: Final = "INSERT INTO facts_fts(rowid, fact_id, fact, grams) VALUES (?, ?, ?, ?)"
_INSERT_MESSAGE: Final = (
    "INSERT INTO messages_fts(rowid, message_id, text, grams) VALUES (?, ?, ?, ?)"
)


class Rows(NamedTuple):
    """What one projected batch adds to the full-text tables (row dicts as apply.py holds them)."""

    entities: Sequence[Mapping[str, Any]]
    """New entity rows, with their final values in the batch."""
    aliases: Sequence[Mapping[str, Any]]
    summaries: Sequence[tuple[UUID, str]]
    """(entity, new summary) of entities written by earlier batches."""
    facts: Sequence[Mapping[str, Any]]
    """The first state row of each new fact version, and of each state with a new sentence."""
    messages: Sequence[Mapping[str, Any]]


def index(connection: Connection, rows: Rows) -> None:
    """Add a batch's rows to the full-text tables, after the graph tables were written.

    Called by apply.py in the batch's transaction, as plain executemany statements. SQL
    triggers on the graph tables did the same work about four times slower per row
    (measured alone), and slowed an incremental catch-up of 50,000 events by a third.
    """
    statements = zip(
        (_INSERT_ENTITY, _ADD_ALIAS, _SET_SUMMARY, _INSERT_FACT, _INSERT_MESSAGE),
        parameters(rows),
        strict=True,
    )
    for sql, params in statements:
        if params:
            run_many(connection, sql, params)


def parameters(rows: Rows) -> list[list[tuple[Any, ...]]]:
    """The parameters of `index`'s five statements (entities, aliases, summaries, facts,
    messages) for `rows`, gram texts cut; PostgreSQL's statements take them too."""
    return [
        [
            (
                e["position"],
                e["entity_id"].hex,
                e["name"],
                e["summary"] or "",
                gram_text(e["name"]),
                gram_text(e["summary"] or ""),
            )
            for e in rows.entities
        ],
        [(a["name"], a["entity_id"].hex, gram_text(a["name"])) for a in rows.aliases],
        [(summary, e.hex, gram_text(summary)) for e, summary in rows.summaries],
        [(f["position"], f["fact_id"].hex, f["fact"], gram_text(f["fact"])) for f in rows.facts],
        [
            (m["position"], m["message_id"].hex, m["text"], gram_text(m["text"]))
            for m in rows.messages
        ],
    ]


# The same content as `index` gives batch by batch, from the graph tables in one statement each.
_FILL: Final = (
    """INSERT INTO entities_fts(rowid, entity_id, name, aliases, summary, name_grams,
                                summary_grams)
       SELECT e.position, e.entity_id, e.name,
              coalesce((SELECT group_concat(a.name, ' ') FROM (
                  SELECT name FROM aliases
                  WHERE entity_id = e.entity_id AND name <> e.name ORDER BY position
              ) AS a), ''),
              coalesce(e.summary, ''), '', ''
       FROM entities AS e ORDER BY e.position""",
    """INSERT INTO facts_fts(rowid, fact_id, fact, grams)
       SELECT position, fact_id, fact, '' FROM (
           SELECT position, fact_id, fact,
                  lag(fact) OVER (PARTITION BY fact_id ORDER BY position) AS before
           FROM facts
       ) WHERE before IS NULL OR before <> fact
       ORDER BY position""",
    """INSERT INTO messages_fts(rowid, message_id, text, grams)
       SELECT position, message_id, text, '' FROM messages ORDER BY position""",
)


def ensure(connection: Connection) -> None:
    """Create the full-text tables if any is missing or differs, filled from the graph tables.

    A no-op when all are in place as defined here (every open of the store calls it), so
    a store made with other tokenizer options is reindexed once.
    """
    tables = connection.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
    present: dict[str, str] = {row[0]: row[1] for row in tables}
    if all(present.get(name) == sql for name, sql in _CREATE_TABLES.items()):
        return
    drop(connection)
    for statement in (*_CREATE_TABLES.values(), *_FILL):
        connection.exec_driver_sql(statement)
    fill_grams(connection, "?")


_GRAM_SOURCES: Final = {
    "entities_fts": ("name || ' ' || aliases", "summary", "name_grams", "summary_grams"),
    "facts_fts": ("fact", "grams"),
    "messages_fts": ("text", "grams"),
}


def fill_grams(connection: Connection, mark: str) -> None:
    """Set the gram columns of the full-text rows `ensure` filled from the graph tables
    (SQL cannot cut them), as `index` would have; `mark` is the driver's placeholder.

    An entity's names are cut together: `gram_text` of texts joined by a space is their
    gram texts joined by a space, as `index` adds them one by one.
    """
    for name, columns in _GRAM_SOURCES.items():
        half = len(columns) // 2
        sources, targets = columns[:half], columns[half:]
        rows = connection.exec_driver_sql(f"SELECT rowid, {', '.join(sources)} FROM {name}")
        changed = [
            (*grams, rowid)
            for rowid, *texts in rows
            if any(grams := tuple(gram_text(t) for t in texts))
        ]
        if changed:
            assignments = ", ".join(f"{target} = {mark}" for target in targets)
            run_many(connection, f"UPDATE {name} SET {assignments} WHERE rowid = {mark}", changed)


def drop(connection: Connection) -> None:
    """Drop the full-text tables."""
    for name in _CREATE_TABLES:
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")


def contents(connection: Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every full-text table's rows (rowid first) in rowid order, for `dump`."""
    return {
        name: [
            tuple(r)
            for r in connection.exec_driver_sql(f"SELECT rowid, * FROM {name} ORDER BY rowid")
        ]
        for name in _CREATE_TABLES
    }


def _quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _word_or_prefix(term: str) -> str:
    """A term as a word or a prefix; a short one (`MIN_TERM_BYTES`) only as a whole word."""
    quoted = _quoted(term)
    if len(term.encode()) < MIN_TERM_BYTES:
        return quoted
    return f"{quoted} OR {quoted}*"


def match_query(terms: Sequence[str]) -> str:
    """The FTS5 query matching every term as a word or a prefix (a term under
    `MIN_TERM_BYTES` only as a whole word: "2" must not find "2024"); each quoted, so none
    is syntax.

    The word itself is asked for as well as the prefix so that bm25 ranks a row holding
    the whole word ("graph") above one holding only a longer word ("graphql").
    """
    return " AND ".join(f"({_word_or_prefix(t)})" for t in terms)


def any_query(terms: Sequence[str], *, prefix: bool = True) -> str:
    """The FTS5 query matching any of the terms (as words, and as prefixes unless not
    `prefix`), each quoted.

    bm25 over it sums each matched term's share, weighted by how rare the term is: a row
    holding more (and rarer) words of a question ranks higher, as in plain BM25. Recall
    asks stemmed running text (facts, messages) without prefixes: the stem already finds
    "painted" for "painting", and a prefix would add unrelated longer words ("art" ->
    "article"; LoCoMo (b) recall@10 0.658 -> 0.661).
    """
    if not prefix:
        return " OR ".join(_quoted(t) for t in terms)
    return " OR ".join(_word_or_prefix(t) for t in terms)


def matches(index: TableClause, name: str = "match") -> ColumnElement[bool]:
    """`index` rows matching the bound parameter `name` (a `match_query`)."""
    fts5 = literal_column(index.name).op("MATCH", is_comparison=True)(bindparam(name))
    return per_dialect(fts5, postgresql=fulltext_pg.matches(index, name))


def among(index: TableClause) -> ColumnElement[bool]:
    """`index` rows whose rowid is in the bound list `rowids`, in a query filtered by `matches`.

    `rowid + 0` keeps the constraint out of FTS5, which would run the whole match again
    for each rowid (a common prefix took 1 ms a rowid); SQLite filters the match instead.
    """
    return (index.c.rowid + 0).in_(bindparam("rowids", expanding=True))


def rank(index: TableClause) -> ColumnElement[float]:
    """How well a row of `index` matches (bm25 with the index's column weights; higher is better).

    Only valid in a query filtered by `matches` on the same index.
    """
    bm25 = -func.bm25(literal_column(index.name), *_WEIGHTS[index.name])
    return per_dialect(bm25, postgresql=fulltext_pg.rank(index))


def _counts(
    names: tuple[str, ...],
    terms: int,
    prefix: bool,
    also: tuple[str, int, bool] | None = None,
) -> ClauseElement:
    """Rows of each index of `names` matching each of the `terms` queries `match_0`,
    `match_1`... (as prefixes too if `prefix`), up to `cap`, one statement for them all
    (index by index); then, for `also` (an index, a number of words and whether they are
    prefixes), its rows matching `also_match_0`... (up to `also_cap`). FTS5 stops at the cap.
    """
    counts = []
    for name, asked, _, mark in _groups(names, terms, prefix, also):
        index = _INDEXES[name]
        for i in range(asked):
            inner = select(index.c.rowid).where(matches(index, f"{mark}match_{i}"))
            inner = inner.limit(bindparam(f"{mark}cap"))
            counts.append(select(func.count()).select_from(inner.subquery()).scalar_subquery())
    return select(*counts)


def _word_counts(
    names: tuple[str, ...],
    terms: int,
    prefix: bool,
    also: tuple[str, int, bool] | None = None,
) -> ClauseElement:
    """`_counts` on PostgreSQL, of the words `word_0`... (`also_word_0`...) from its word
    tables (`fulltext_pg.counts`): what they cannot say is left to `_gin_counts`."""
    return fulltext_pg.counts(
        [
            fulltext_pg.WordGroup(
                _INDEXES[name], [f"{mark}word_{i}" for i in range(asked)], as_prefix, f"{mark}cap"
            )
            for name, asked, as_prefix, mark in _groups(names, terms, prefix, also)
        ]
    )


def _groups(
    names: tuple[str, ...], terms: int, prefix: bool, also: tuple[str, int, bool] | None
) -> list[tuple[str, int, bool, str]]:
    """Each index counted: its name, words, whether they are prefixes, its parameters' mark."""
    groups = [(name, terms, prefix, "") for name in names]
    return groups if also is None else [*groups, (*also, "also_")]


def _gin_counts(asked: tuple[tuple[str, str, str, bool], ...]) -> ClauseElement:
    """The counts `_word_counts` left to the GIN index: (index, query, cap, whole) each."""
    return fulltext_pg.gin_counts([(_INDEXES[n], q, cap, whole) for n, q, cap, whole in asked])


def _floor(name: str, below: bool, walk: bool = False) -> ClauseElement:
    """The rowid of the match `cap` places below the newest (at or below `ceiling` if
    `below`): None when fewer match. `walk`: a prefix on PostgreSQL (`fulltext_pg.floor`)."""
    index = _INDEXES[name]
    statement = select(index.c.rowid).where(matches(index))
    if below:
        statement = statement.where(index.c.rowid <= bindparam("ceiling"))
    if walk:
        return fulltext_pg.floor(index, below)
    return statement.order_by(index.c.rowid.desc()).limit(1).offset(bindparam("cap"))


def _floors(name: str) -> ClauseElement:
    """`_floor` below `ceiling` for each of the older windows at once: the rowid of every
    `cap`-th match at or below `ceiling`, newest first (the `reach` newest are numbered)."""
    index = _INDEXES[name]
    newest = (
        select(index.c.rowid.label("at"))
        .where(matches(index), index.c.rowid <= bindparam("ceiling"))
        .order_by(index.c.rowid.desc())
        .limit(bindparam("reach"))
        .subquery()
    )
    place = func.row_number().over(order_by=newest.c.at.desc()) - 1
    numbered = select(newest.c.at, place.label("place")).subquery()
    return (
        select(numbered.c.at)
        .where(numbered.c.place > 0, numbered.c.place % bindparam("cap") == 0)
        .order_by(numbered.c.at.desc())
    )


_INDEXES: Final = {i.name: i for i in (entities_fts, facts_fts, messages_fts)}
_COUNTS: Final = Prepared(_counts)
_WORD_COUNTS: Final = Prepared(_word_counts, keyed=True)
_GIN_COUNTS: Final = Prepared(_gin_counts)
_FLOOR: Final = Prepared(_floor)
_FLOORS: Final = Prepared(_floors)


def term_counts(
    connection: Connection,
    indexes: Sequence[TableClause],
    terms: Sequence[str],
    *,
    budget: int,
    prefix: bool,
) -> dict[str, dict[str, int]]:
    """Each index's rows (by its name) matching each of `terms`, up to `budget + 1`, read
    in one statement: what `rarest` chooses from (a caller asking several indexes about
    the same words passes each its own to `windows`)."""
    return counted_terms(connection, indexes, terms, budget=budget, prefix=prefix)


class Counted(NamedTuple):
    """A further index for `counted_terms`: its words, budget and prefix, as `term_counts`
    takes them."""

    table: TableClause
    terms: Sequence[str]
    budget: int
    prefix: bool


def counted_terms(
    connection: Connection,
    indexes: Sequence[TableClause],
    terms: Sequence[str],
    *,
    budget: int,
    prefix: bool,
    also: Counted | None = None,
) -> dict[str, dict[str, int]]:
    """`term_counts`, and those of `also` (another index, other words, budget and prefix),
    in the same statement."""
    asked = list(dict.fromkeys(terms))
    more = [] if also is None else list(dict.fromkeys(also.terms))
    found: dict[str, dict[str, int]] = {index.name: {} for index in indexes}
    if also is not None:
        found[also.table.name] = {}
    if not asked and not more:
        return found
    names = tuple(index.name for index in indexes) if asked else ()
    params: dict[str, Any] = {"cap": budget + 1}
    params.update((f"match_{i}", any_query([t], prefix=prefix)) for i, t in enumerate(asked))
    params.update((f"word_{i}", t) for i, t in enumerate(asked))
    extra = None
    if also is not None and more:
        extra = (also.table.name, len(more), also.prefix)
        params["also_cap"] = also.budget + 1
        params.update(
            (f"also_match_{i}", any_query([t], prefix=also.prefix)) for i, t in enumerate(more)
        )
        params.update((f"also_word_{i}", t) for i, t in enumerate(more))
    shape = (names, len(asked), prefix, extra)
    if connection.dialect.name == "postgresql":
        row = _pg_counts(connection, params, shape)
    else:
        row = _COUNTS.rows(connection, params, *shape)[0]
    for i, name in enumerate(names):
        found[name] = dict(zip(asked, row[i * len(asked) : (i + 1) * len(asked)], strict=True))
    if extra is not None:
        found[extra[0]] = dict(zip(more, row[len(names) * len(asked) :], strict=True))
    return found


def _pg_counts(
    connection: Connection,
    params: dict[str, Any],
    shape: tuple[tuple[str, ...], int, bool, tuple[str, int, bool] | None],
) -> list[int]:
    """`_COUNTS`'s row on PostgreSQL: from the word tables, then the GIN index for what
    they cannot say (a prefix of several rare lexemes, a word the parser cuts in two)."""
    row = list(_WORD_COUNTS.rows(connection, params, *shape)[0])
    left = []
    for name, words, _, mark in _groups(*shape):
        left += [(name, f"{mark}match_{i}", f"{mark}cap") for i in range(words)]
    wanted = [i for i, count in enumerate(row) if count < 0]
    if wanted:
        asked = tuple((*left[i], row[i] == fulltext_pg.GIN_WHOLE) for i in wanted)
        found = _GIN_COUNTS.rows(connection, params, asked)[0]
        for i, count in zip(wanted, found, strict=True):
            row[i] = count
    return row


def rarest(
    connection: Connection,
    index: TableClause,
    terms: Sequence[str],
    *,
    budget: int,
    prefix: bool,
    counts: Mapping[str, int] | None = None,
) -> tuple[str, int | None]:
    """An `any_query` over the rarest of `terms` in `index`, and a rowid floor, so that at
    most about `budget` rows match (bm25 costs a few microseconds a matching row).

    Words are taken rarest first while their matches add up to `budget` (the rarest
    always; a word no row holds is left out): a common word ("work", "project") tells
    almost nothing and would be ranked over thousands of rows. When even the rarest word
    matches more than `budget` rows, only its newest `budget` count (rows above the
    floor; None: no floor). An empty match: no word matches anything. `counts`: those
    `term_counts` read for `index`, `terms`, `budget` and `prefix` (else they are read).
    """
    if counts is None:
        counts = term_counts(connection, [index], terms, budget=budget, prefix=prefix)[index.name]
    chosen: list[str] = []
    total = 0
    for term in sorted((t for t in counts if counts[t]), key=lambda t: counts[t]):
        if chosen and total + counts[term] > budget:
            break
        chosen.append(term)
        total += counts[term]
    if not chosen:
        return "", None
    match = any_query(chosen, prefix=prefix)
    if total <= budget:
        return match, None
    params = {"match": match, "cap": budget, "scan": budget * fulltext_pg.SCAN_FIRST}
    # PostgreSQL guesses how many rows hold a whole word well (from its statistics), and a
    # prefix badly: it plans a prefix's floor poorly (`fulltext_pg.floor`)
    walk = prefix and connection.dialect.name == "postgresql"
    found = _FLOOR.rows(connection, params, index.name, False, walk)
    return match, (found[0][0] if found else None)


MOST_WINDOWS: Final = 8
"""Windows `windows` gives at most (8 x 500 rows for a recall's full text: ~16 ms of bm25)."""


class Window(NamedTuple):
    """Rows of a full-text index to rank: those `match` finds above `floor` and at or below
    `ceiling` (None: no bound)."""

    match: str
    floor: int | None
    ceiling: int | None


def windows(
    connection: Connection,
    index: TableClause,
    terms: Sequence[str],
    *,
    budget: int,
    prefix: bool,
    counts: Mapping[str, int] | None = None,
) -> Iterator[Window]:
    """`rarest`'s rows, newest first, in windows of about `budget` rows: the caller ranks
    one and asks for the next while it has found fewer rows it can show than it wants.

    Rows are keyed by log position, so the newest are the likeliest to be believed now;
    but a question about an earlier moment (or a word whose newest sentences were all
    withdrawn) needs older ones, which the first window alone would never reach. At most
    MOST_WINDOWS: a word in a hundred thousand sentences, asked about a moment long past,
    would otherwise be ranked over all of them. `counts`: as `rarest` takes them.
    """
    match, floor = rarest(connection, index, terms, budget=budget, prefix=prefix, counts=counts)
    if not match:
        return
    yield Window(match, floor, None)
    if floor is not None and connection.dialect.name == "postgresql":
        # Each floor below was one statement, and each ranked every match again: on
        # PostgreSQL the older windows' floors are read at once when the first is not
        # enough (the same rows: every `budget`-th match below the first floor).
        params = {"match": match, "cap": budget, "ceiling": floor}
        params["reach"] = budget * (MOST_WINDOWS - 1) + 1
        floors = [row[0] for row in _FLOORS.rows(connection, params, index.name)]
        for i in range(MOST_WINDOWS - 1):
            ceiling, floor = floor, (floors[i] if i < len(floors) else None)
            yield Window(match, floor, ceiling)
            if floor is None:
                return
        return
    for _ in range(MOST_WINDOWS - 1):
        if floor is None:
            return
        params = {"match": match, "cap": budget, "ceiling": floor}
        found = _FLOOR.rows(connection, params, index.name, True, False)
        ceiling, floor = floor, (found[0][0] if found else None)
        yield Window(match, floor, ceiling)
