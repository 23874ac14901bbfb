"""Full text on PostgreSQL: `readmodels.fulltext`'s tables and questions with PostgreSQL's own.

The three tables keep FTS5's names and columns (`rowid` is the log position of the event
that created the row's subject) plus `doc`, a generated `tsvector` with a GIN index, so
the queries in search.py and recall.py run unchanged: `fulltext.matches` and
`fulltext.rank` compile to this module's `matches` and `rank` on PostgreSQL
(`per_dialect`), and the FTS5 query text they are given (quoted plain words, `*` for a
prefix, AND and OR, see `fulltext.match_query`) is rewritten into a `tsquery` in SQL.

Close to FTS5's unicode61 tokenizer: text is lower-cased, common Latin diacritics are
removed, and every run of other than letters and digits separates words. Entity names
and aliases weigh A and summaries D, ranked with weights 1.0 and 0.1 (names count 10x).
Fact sentences and messages are stemmed (English Snowball, without a stopword list:
FTS5's porter keeps every word too); names are not. The gram columns (pairs of characters
of scripts written without spaces, cut in Python: `domain.search_text.gram_text`) join
`doc` as their text does, split at spaces only. `ts_rank` is not bm25 (no inverse
document frequency), so scores and the order of near ties can differ from SQLite's.

Each table has a word table beside it (`facts_fts_words`...): how many rows hold each
lexeme, kept by `index` in the same transaction. A recall chooses its words by how many
rows match each (up to a cap, `fulltext.term_counts`); FTS5 stops counting at the cap, but
a GIN index answers a match with a bitmap of every matching row first (a name prefix held
by 99,393 of a million rows: 24 ms). The word tables answer those counts instead wherever
they can (`counts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    Select,
    TableClause,
    Text,
    bindparam,
    case,
    column,
    exists,
    func,
    literal_column,
    select,
    table,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.visitors import InternalTraversal

from apexmem.readmodels.bulk import ARRAY_ROWS, run_many

if TYPE_CHECKING:
    from apexmem.readmodels.fulltext import Rows

__all__ = [
    "GIN_LIMITED",
    "GIN_WHOLE",
    "SCAN_FIRST",
    "TABLES",
    "WORD_TABLES",
    "WordGroup",
    "contents",
    "counts",
    "drop",
    "ensure",
    "floor",
    "gin_counts",
    "index",
    "matches",
    "per_dialect",
    "rank",
]

_T = TypeVar("_T")

_MARK: Final = "apexmem full text 3"
"""Each table's comment: a table without it was made otherwise and is made again."""
_WORDS_MARK: Final = "apexmem words 1"
"""Each word table's comment, likewise."""
_ACCENTED: Final = "àáâãäåāăąçćčďèéêëēėęěìíîïīįłñńňòóôõöøōőŕřśšşťùúûüūůűųýÿźżž"
_PLAIN: Final = "aaaaaaaaacccdeeeeeeeeiiiiiilnnnooooooooorrsssstuuuuuuuuyyzzz"
_TEXT_CONFIG: Final = "apexmem_text"


def _words(expression: str) -> str:
    """SQL for `expression` lower-cased, without diacritics, one space between words."""
    lowered = f"translate(lower({expression}), '{_ACCENTED}', '{_PLAIN}')"
    return f"regexp_replace({lowered}, '[^[:alnum:]]+', ' ', 'g')"


_CONFIGS: Final = {
    "entities_fts": "simple",
    "facts_fts": _TEXT_CONFIG,
    "messages_fts": _TEXT_CONFIG,
}
_CREATE: Final = {
    "entities_fts": f"""CREATE TABLE entities_fts (
        rowid bigint PRIMARY KEY, entity_id varchar(32) NOT NULL, name text NOT NULL,
        aliases text NOT NULL, summary text NOT NULL,
        name_grams text NOT NULL DEFAULT '', summary_grams text NOT NULL DEFAULT '',
        doc tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('simple', {_words("name || ' ' || aliases")}), 'A')
            || setweight(to_tsvector('simple', {_words("summary")}), 'D')
            || setweight(to_tsvector('simple', name_grams), 'A')
            || setweight(to_tsvector('simple', summary_grams), 'D')) STORED)""",
    "facts_fts": f"""CREATE TABLE facts_fts (
        rowid bigint PRIMARY KEY, fact_id varchar(32) NOT NULL, fact text NOT NULL,
        grams text NOT NULL DEFAULT '',
        doc tsvector GENERATED ALWAYS AS (
            to_tsvector('{_TEXT_CONFIG}', {_words("fact")})
            || to_tsvector('{_TEXT_CONFIG}', grams)) STORED)""",
    "messages_fts": f"""CREATE TABLE messages_fts (
        rowid bigint PRIMARY KEY, message_id varchar(32) NOT NULL, text text NOT NULL,
        grams text NOT NULL DEFAULT '',
        doc tsvector GENERATED ALWAYS AS (
            to_tsvector('{_TEXT_CONFIG}', {_words("text")})
            || to_tsvector('{_TEXT_CONFIG}', grams)) STORED)""",
}
TABLES: Final = tuple(_CREATE)
_WORDS: Final = {name: f"{name}_words" for name in TABLES}
"""Each table's word table: how many of its rows hold each lexeme (its `doc`'s)."""
WORD_TABLES: Final = tuple(_WORDS.values())
_COLUMNS: Final = {
    "entities_fts": "rowid, entity_id, name, aliases, summary, name_grams, summary_grams",
    "facts_fts": "rowid, fact_id, fact, grams",
    "messages_fts": "rowid, message_id, text, grams",
}
_CONFIGURE: Final = (
    "CREATE TEXT SEARCH DICTIONARY apexmem_english (TEMPLATE = snowball, Language = english)",
    f"CREATE TEXT SEARCH CONFIGURATION {_TEXT_CONFIG} (COPY = pg_catalog.english)",
    f"""ALTER TEXT SEARCH CONFIGURATION {_TEXT_CONFIG} ALTER MAPPING
        FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH apexmem_english""",
)

_INSERT_ENTITY: Final = (
    "INSERT INTO entities_fts (rowid, entity_id, name, aliases, summary, name_grams,"
    " summary_grams) VALUES (%s, %s, %s, '', %s, %s, %s)"
)
# The name an entity is observed under is claimed as its first alias: it is in `name` already.
# Parameters by name: `fulltext.parameters` gives (name, entity, grams).
_ADD_ALIAS: Final = """
    UPDATE entities_fts SET aliases = ltrim(aliases || ' ' || %(n)s),
        name_grams = CASE WHEN %(g)s = '' THEN name_grams
                          ELSE ltrim(name_grams || ' ' || %(g)s) END
    WHERE rowid = (SELECT position FROM entities WHERE entity_id = %(e)s AND name <> %(n)s)"""
_SET_SUMMARY: Final = """
    UPDATE entities_fts SET summary = %s, summary_grams = %s
    WHERE rowid = (SELECT position FROM entities WHERE entity_id = %s)"""
_INSERT_FACT: Final = "INSERT INTO facts_fts (rowid, fact_id, fact, grams) VALUES (%s, %s, %s, %s)"
_INSERT_MESSAGE: Final = (
    "INSERT INTO messages_fts (rowid, message_id, text, grams) VALUES (%s, %s, %s, %s)"
)

_ARRAYS: Final = {
    _INSERT_ENTITY: "INSERT INTO entities_fts (rowid, entity_id, name, aliases, summary,"
    " name_grams, summary_grams) SELECT r, e, n, '', s, ng, sg FROM unnest(%s::bigint[],"
    " %s::varchar[], %s::text[], %s::text[], %s::text[], %s::text[]) AS t(r, e, n, s, ng, sg)",
    _INSERT_FACT: "INSERT INTO facts_fts (rowid, fact_id, fact, grams)"
    " SELECT * FROM unnest(%s::bigint[], %s::varchar[], %s::text[], %s::text[])",
    _INSERT_MESSAGE: "INSERT INTO messages_fts (rowid, message_id, text, grams)"
    " SELECT * FROM unnest(%s::bigint[], %s::varchar[], %s::text[], %s::text[])",
}
"""Each insert as one statement over arrays of its columns (`bulk.ARRAY_ROWS` rows or more):
an executemany is a statement per row on the server."""

# The same content as `index` gives batch by batch, from the graph tables in one statement each.
_FILL: Final = (
    """INSERT INTO entities_fts (rowid, entity_id, name, aliases, summary)
       SELECT e.position, e.entity_id, e.name,
              coalesce((SELECT string_agg(a.name, ' ' ORDER BY a.position) FROM aliases AS a
                        WHERE a.entity_id = e.entity_id AND a.name <> e.name), ''),
              coalesce(e.summary, '')
       FROM entities AS e""",
    """INSERT INTO facts_fts (rowid, fact_id, fact)
       SELECT position, fact_id, fact FROM (
           SELECT position, fact_id, fact,
                  lag(fact) OVER (PARTITION BY fact_id ORDER BY position) AS before
           FROM facts
       ) AS f WHERE before IS NULL OR before <> fact""",
    """INSERT INTO messages_fts (rowid, message_id, text)
       SELECT position, message_id, text FROM messages""",
)


_HOLDERS: Final = """SELECT word, count(*) AS rows
    FROM {table}, unnest(tsvector_to_array(doc)) AS word WHERE {where} GROUP BY word"""
_COUNT_WORDS: Final = """INSERT INTO {words} (word, rows) {holders} ORDER BY word
    ON CONFLICT (word) DO UPDATE SET rows = {words}.rows + excluded.rows"""
_UNCOUNT_WORDS: Final = """UPDATE {words} AS w SET rows = w.rows - d.rows FROM ({holders}) AS d
    WHERE w.word = d.word"""
_NEW: Final = "rowid = ANY(%(new)s::bigint[])"
_CHANGED: Final = (
    "rowid IN (SELECT position FROM entities WHERE entity_id = ANY(%(changed)s::varchar[]))"
)


def _count_words(connection: Connection, name: str, where: str, params: Any, *, sign: int) -> None:
    """Add (`sign` 1) or take away (-1) the lexemes of the rows of table `name` `where` selects."""
    holders = _HOLDERS.format(table=name, where=where)
    statement = _COUNT_WORDS if sign > 0 else _UNCOUNT_WORDS
    connection.exec_driver_sql(statement.format(words=_WORDS[name], holders=holders), params)


def index(connection: Connection, rows: Rows) -> None:
    """Add a batch's rows to the full-text tables, after the graph tables were written, and
    their lexemes to the word tables (an entity row a name or summary changes: its old
    lexemes taken away first, its new ones added after)."""
    from apexmem.readmodels.fulltext import parameters

    entities, aliases, summaries, facts, messages = parameters(rows)
    changed = sorted({e for _, e, _ in aliases} | {e for _, e, _ in summaries})
    if changed:
        _count_words(connection, "entities_fts", _CHANGED, {"changed": changed}, sign=-1)
    statements: list[tuple[str, list[Any]]] = [
        (_INSERT_ENTITY, entities),
        (_ADD_ALIAS, [{"n": n, "e": e, "g": g} for n, e, g in aliases]),
        (_SET_SUMMARY, [(summary, grams, e) for summary, e, grams in summaries]),
        (_INSERT_FACT, facts),
        (_INSERT_MESSAGE, messages),
    ]
    for sql, params in statements:
        arrays = _ARRAYS.get(sql)
        if arrays is not None and len(params) >= ARRAY_ROWS:
            connection.exec_driver_sql(arrays, tuple(map(list, zip(*params, strict=True))))
        elif params:
            run_many(connection, sql, params)
    if entities or changed:
        new = [e[0] for e in entities]
        both = {"new": new, "changed": changed}
        _count_words(connection, "entities_fts", f"{_NEW} OR {_CHANGED}", both, sign=1)
    for name, added in (("facts_fts", facts), ("messages_fts", messages)):
        if added:
            _count_words(connection, name, _NEW, {"new": [a[0] for a in added]}, sign=1)


def ensure(connection: Connection) -> None:
    """Create the full-text tables if any is missing or was made otherwise, filled from the
    graph tables, and the word tables, counted from them (a no-op when all are in place:
    every open of the store calls it). Word tables alone are made again without touching
    the full-text tables (a store made before they existed)."""
    every = (*TABLES, *WORD_TABLES)
    marks = connection.exec_driver_sql(
        "SELECT " + ", ".join(f"obj_description(to_regclass('{t}'), 'pg_class')" for t in every)
    ).one()
    texts, words = marks[: len(TABLES)], marks[len(TABLES) :]
    if all(mark == _MARK for mark in texts):
        if any(mark != _WORDS_MARK for mark in words):
            _make_word_tables(connection)
        return
    drop(connection)
    for statement in _CONFIGURE:
        connection.exec_driver_sql(statement)
    for name, create in _CREATE.items():
        connection.exec_driver_sql(create)
        connection.exec_driver_sql(f"CREATE INDEX {name}_doc ON {name} USING gin (doc)")
        connection.exec_driver_sql(f"COMMENT ON TABLE {name} IS '{_MARK}'")
    for statement in _FILL:
        connection.exec_driver_sql(statement)
    from apexmem.readmodels.fulltext import fill_grams

    fill_grams(connection, "%s")
    _make_word_tables(connection)


def _make_word_tables(connection: Connection) -> None:
    """(Re)make the word tables, counted from the full-text tables."""
    for name, words in _WORDS.items():
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {words}")
        connection.exec_driver_sql(
            f'CREATE TABLE {words} (word text COLLATE "C" PRIMARY KEY, rows bigint NOT NULL)'
        )
        connection.exec_driver_sql(f"COMMENT ON TABLE {words} IS '{_WORDS_MARK}'")
        _count_words(connection, name, "true", {}, sign=1)


def drop(connection: Connection) -> None:
    """Drop the full-text tables and their text search configuration."""
    for name in _CREATE:
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {name}, {_WORDS[name]}")
    connection.exec_driver_sql(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {_TEXT_CONFIG}")
    connection.exec_driver_sql("DROP TEXT SEARCH DICTIONARY IF EXISTS apexmem_english")


def contents(connection: Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every full-text table's rows (rowid first, as FTS5's `rowid, *`) in rowid order;
    then each word table's words some row holds (in byte order, with their counts)."""
    tables = {
        name: [
            tuple(r)
            for r in connection.exec_driver_sql(
                f"SELECT {_COLUMNS[name]} FROM {name} ORDER BY rowid"
            )
        ]
        for name in _CREATE
    }
    for words in WORD_TABLES:
        rows = connection.exec_driver_sql(f"SELECT * FROM {words} WHERE rows > 0 ORDER BY word")
        tables[words] = [tuple(r) for r in rows]
    return tables


def _query(index: TableClause, name: str = "match") -> ColumnElement[Any]:
    """The bound FTS5 query text `name` as a tsquery of the index's configuration.

    Its words are plain letters and digits (domain.search_text), so quoting needs no
    escapes: `"w"*` becomes `'w':*`, `"w"` becomes `'w'`, OR `|` and AND `&`.
    """
    text: ColumnElement[Any] = bindparam(name)
    for pattern, replacement in _REWRITES:
        text = func.regexp_replace(text, pattern, replacement, _GLOBAL)
    return func.to_tsquery(_config(index), _plain(text))


def _config(index: TableClause) -> ColumnElement[Any]:
    return literal_column(f"'{_CONFIGS[index.name]}'::regconfig")


def _plain(text: ColumnElement[Any]) -> ColumnElement[Any]:
    """`text` lower-cased, then without diacritics, as `_words` makes a row's text (only
    lower-case letters are translated). Query words come lower-cased already
    (`domain.search_text`); a word's lexemes for the word tables are made the same way."""
    return func.translate(func.lower(text), _sql_text(_ACCENTED), _sql_text(_PLAIN))


def _sql_text(value: str) -> ColumnElement[Any]:
    """`value` written into the statement as a string literal, not bound: a full-text
    question's constants were four fifths of its parameters, each converted and sent on
    every call (a term count: 0.49 -> 0.36 ms at 10,000 facts)."""
    assert "%" not in value  # the driver's parameter marker; none of these has one
    return literal_column("'" + value.replace("'", "''") + "'")


_REWRITES: Final = tuple(
    (_sql_text(pattern), _sql_text(replacement))
    for pattern, replacement in (
        ('"([^"]*)"\\*', "'\\1':*"),
        ('"([^"]*)"', "'\\1'"),
        (" OR ", " | "),
        (" AND ", " & "),
    )
)
_GLOBAL: Final = _sql_text("g")


class WordGroup(NamedTuple):
    """Words to count in one index (`counts`): the bound names of the words, whether each
    is a prefix too, and the bound cap."""

    table: TableClause
    words: Sequence[str]
    prefix: bool
    cap: str


def _matched(index: TableClause, query: str, cap: str, *, limited: bool) -> ColumnElement[int]:
    """The rows of `index` the bound `query` matches, up to the bound `cap`, read from the
    GIN index: with a LIMIT, or (not `limited`) counted whole. A limit made the planner
    scan the table for a rare prefix it thought common (all 101,011 names for 3 rows:
    14 ms; the bitmap: 0.3 ms)."""
    if not limited:
        counted = select(func.least(func.count(), bindparam(cap, type_=Integer)))
        return counted.select_from(index).where(matches(index, query)).scalar_subquery()
    inner = select(index.c.rowid).where(matches(index, query)).limit(bindparam(cap))
    return select(func.count()).select_from(inner.subquery()).scalar_subquery()


GIN_LIMITED: Final = -1
"""A count `counts` leaves to the GIN index, up to the cap (`gin_counts`)."""
GIN_WHOLE: Final = -2
"""A count `counts` leaves to the GIN index, counted whole (`gin_counts`)."""


def counts(groups: Sequence[WordGroup]) -> Select[Any]:
    """One row: how many rows of each group's index hold each of its bound words (as a
    prefix too if `prefix`), up to its bound cap, from the word tables where they can say:

    - a whole word that is one lexeme: the rows holding it;
    - a prefix: the cap when a lexeme beginning with it is held by as many rows, else the
      rows holding the only such lexeme (none: 0).

    Else the count is left to the GIN index (`gin_counts`): `GIN_WHOLE` for a prefix of
    several lexemes, each held by fewer rows than the cap (their rows may overlap), to be
    counted whole (at most their rows); `GIN_LIMITED` for a word the parser cuts in two
    (its query asks for both in a row), up to the cap. Without a full-text query in it,
    the statement is planned in a fraction of the time (the planner costs each match
    against the index's statistics) and its plan holds for any words: it may be prepared.

    Each word's lexemes are made once (per configuration) in a subquery of their own,
    `OFFSET 0` keeping the planner from copying them into every condition.
    """
    made: dict[tuple[str, str], ColumnElement[Any]] = {}
    for group in groups:
        config = _CONFIGS[group.table.name]
        for word in group.words:
            if (config, word) not in made:
                text = func.to_tsvector(_config(group.table), _plain(bindparam(word)))
                array = func.tsvector_to_array(text, type_=ARRAY(Text))
                made[(config, word)] = array.label(f"lexemes_{len(made)}")
    lexemes = select(*made.values()).offset(0).subquery("lexemes")
    columns: list[ColumnElement[Any]] = []
    for group in groups:
        config = _CONFIGS[group.table.name]
        words = table(_WORDS[group.table.name], column("word", Text), column("rows"))
        cap = bindparam(group.cap, type_=Integer)
        for word in group.words:
            found = lexemes.c[made[(config, word)].name]
            lexeme = found[1].collate("C")
            one = func.cardinality(found) == 1
            if not group.prefix:
                held = select(func.least(words.c.rows, cap)).where(words.c.word == lexeme)
                counted = func.coalesce(held.scalar_subquery(), 0)
                columns.append(case((one, counted), else_=GIN_LIMITED))
                continue
            # every lexeme beginning with it: a range of the word table's key
            holding = [words.c.word >= lexeme, words.c.word < lexeme.concat(_LAST)]
            enough = exists().where(*holding, words.c.rows >= cap)
            first = select(words.c.rows).where(*holding).order_by(words.c.word).limit(1)
            several = first.offset(1).exists()
            only = func.coalesce(first.scalar_subquery(), 0)
            columns.append(
                case((~one, GIN_LIMITED), (enough, cap), (several, GIN_WHOLE), else_=only)
            )
    return select(*columns).select_from(lexemes)


def gin_counts(asked: Sequence[tuple[TableClause, str, str, bool]]) -> Select[Any]:
    """One row: for each (index, bound query, bound cap, whole) of `asked`, the rows of the
    index the query matches, read from its GIN index up to the cap: with a LIMIT, or
    counted whole if `whole` (what `counts` left to it)."""
    columns: list[ColumnElement[Any]] = [
        _matched(index, query, cap, limited=not whole) for index, query, cap, whole in asked
    ]
    return select(*columns)


SCAN_FIRST: Final = 16
"""`floor` looks for its match among the newest `cap` x SCAN_FIRST rows first."""


def floor(index: TableClause, below: bool) -> Select[Any]:
    """One row: the rowid of `index`'s match of the bound `match` (at or below the bound
    `ceiling` if `below`) `cap` places below the newest; None when fewer match.

    For a prefix (a whole word's rows are guessed well from the statistics, and the plain
    ordered statement serves it). Ordered by rowid with a limit, the planner walked the
    primary key backwards when it thought a prefix common, reading every row when it was
    not (a name prefix it expected in 2,298 rows and 596 held: 99,000 rows, 32 ms); asked
    for every match first, it builds a bitmap of all of them, as slow for a common word
    (45,554 rows: 87 ms, where the walk read 10,506 rows in 1.8 ms). So the newest `scan`
    rows are looked at first (a walk of bounded length, enough for a word in one row of
    `SCAN_FIRST`), and only when they hold too few matches is every match asked for (a
    bitmap of a word rare there). The same row either way.
    """
    bound = [index.c.rowid <= bindparam("ceiling")] if below else []
    doc: ColumnElement[Any] = literal_column(f"{index.name}.doc")
    walked = select(index.c.rowid, doc.label("doc")).where(*bound)
    newest = walked.order_by(index.c.rowid.desc()).limit(bindparam("scan")).subquery("newest")
    held = newest.c.doc.op("@@", is_comparison=True)(_query(index))
    near = select(newest.c.rowid).where(held).order_by(newest.c.rowid.desc())
    near = near.limit(1).offset(bindparam("cap"))
    # OFFSET 0: every match is read first (a bitmap), not found walking the key backwards
    every = select(index.c.rowid).where(matches(index), *bound).offset(0).subquery("every")
    anywhere = select(every.c.rowid).order_by(every.c.rowid.desc())
    anywhere = anywhere.limit(1).offset(bindparam("cap"))
    return select(func.coalesce(near.scalar_subquery(), anywhere.scalar_subquery()))


_LAST: Final = literal_column("chr(1114111)", Text)
"""The last code point: a text beginning with a prefix sorts below the prefix followed by it
(byte order, the word table's collation)."""


def matches(index: TableClause, name: str = "match") -> ColumnElement[bool]:
    """`index` rows matching the bound parameter `name` (a `fulltext.match_query`)."""
    return literal_column(f"{index.name}.doc").op("@@", is_comparison=True)(_query(index, name))


_WEIGHTS: Final[ColumnElement[Any]] = literal_column("'{0.1, 0.2, 0.4, 1.0}'::float4[]")
"""ts_rank's weights of D, C, B, A: a name (A) counts 10x a summary (D)."""


def rank(index: TableClause) -> ColumnElement[float]:
    """How well a row of `index` matches (`ts_rank`, higher is better).

    Not normalized by length: with it, "GraphQL" outranked "Graph databases" for "graph",
    where bm25 ranks the whole word first.
    """
    return func.ts_rank(_WEIGHTS, literal_column(f"{index.name}.doc"), _query(index))


class _PerDialect(ColumnElement[_T]):
    """One SQL expression written two ways: PostgreSQL's, and SQLite's for every other."""

    __visit_name__ = "apexmem_per_dialect"
    inherit_cache = True
    _traverse_internals = [
        ("sqlite", InternalTraversal.dp_clauseelement),
        ("postgresql", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, sqlite: ColumnElement[_T], postgresql: ColumnElement[Any]) -> None:
        self.sqlite = sqlite
        self.postgresql = postgresql
        self.type = sqlite.type
        # A MATCH comparison stands alone in a WHERE clause (no "= 1" added on SQLite).
        self._is_implicitly_boolean = sqlite._is_implicitly_boolean


def per_dialect(sqlite: ColumnElement[_T], *, postgresql: ColumnElement[Any]) -> ColumnElement[_T]:
    """An expression compiled as `postgresql` on PostgreSQL and as `sqlite` elsewhere."""
    return _PerDialect(sqlite, postgresql)


@compiles(_PerDialect)
def _compile_default(element: _PerDialect[Any], compiler: SQLCompiler, **kw: Any) -> str:
    return str(compiler.process(element.sqlite, **kw))


@compiles(_PerDialect, "postgresql")
def _compile_postgresql(element: _PerDialect[Any], compiler: SQLCompiler, **kw: Any) -> str:
    return str(compiler.process(element.postgresql, **kw))
