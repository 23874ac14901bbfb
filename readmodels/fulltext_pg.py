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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, TypeVar

from sqlalchemy import ColumnElement, Connection, TableClause, bindparam, func, literal_column
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.visitors import InternalTraversal

from apexmem.readmodels.bulk import run_many

if TYPE_CHECKING:
    from apexmem.readmodels.fulltext import Rows

__all__ = [
    "TABLES",
    "contents",
    "drop",
    "ensure",
    "index",
    "matches",
    "per_dialect",
    "rank",
]

_T = TypeVar("_T")

_MARK: Final = "apexmem full text 3"
"""Each table's comment: a table without it was made otherwise and is made again."""
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


def index(connection: Connection, rows: Rows) -> None:
    """Add a batch's rows to the full-text tables, after the graph tables were written."""
    from apexmem.readmodels.fulltext import parameters

    entities, aliases, summaries, facts, messages = parameters(rows)
    statements: list[tuple[str, list[Any]]] = [
        (_INSERT_ENTITY, entities),
        (_ADD_ALIAS, [{"n": n, "e": e, "g": g} for n, e, g in aliases]),
        (_SET_SUMMARY, [(summary, grams, e) for summary, e, grams in summaries]),
        (_INSERT_FACT, facts),
        (_INSERT_MESSAGE, messages),
    ]
    for sql, params in statements:
        if params:
            run_many(connection, sql, params)


def ensure(connection: Connection) -> None:
    """Create the full-text tables if any is missing or was made otherwise, filled from the
    graph tables (a no-op when all are in place: every open of the store calls it)."""
    marks = connection.exec_driver_sql(
        "SELECT " + ", ".join(f"obj_description(to_regclass('{t}'), 'pg_class')" for t in TABLES)
    ).one()
    if all(mark == _MARK for mark in marks):
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


def drop(connection: Connection) -> None:
    """Drop the full-text tables and their text search configuration."""
    for name in _CREATE:
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
    connection.exec_driver_sql(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {_TEXT_CONFIG}")
    connection.exec_driver_sql("DROP TEXT SEARCH DICTIONARY IF EXISTS apexmem_english")


def contents(connection: Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every full-text table's rows (rowid first, as FTS5's `rowid, *`) in rowid order."""
    return {
        name: [
            tuple(r)
            for r in connection.exec_driver_sql(
                f"SELECT {_COLUMNS[name]} FROM {name} ORDER BY rowid"
            )
        ]
        for name in _CREATE
    }


def _query(index: TableClause, name: str = "match") -> ColumnElement[Any]:
    """The bound FTS5 query text `name` as a tsquery of the index's configuration.

    Its words are plain letters and digits (domain.search_text), so quoting needs no
    escapes: `"w"*` becomes `'w':*`, `"w"` becomes `'w'`, OR `|` and AND `&`.
    """
    text: ColumnElement[Any] = bindparam(name)
    for pattern, replacement in _REWRITES:
        text = func.regexp_replace(text, pattern, replacement, _GLOBAL)
    text = func.translate(text, _sql_text(_ACCENTED), _sql_text(_PLAIN))
    config: ColumnElement[Any] = literal_column(f"'{_CONFIGS[index.name]}'::regconfig")
    return func.to_tsquery(config, text)


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
