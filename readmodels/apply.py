"""Apply projector output to the read model: one batch, a few executemany statements.

Changes are folded in memory first (a row inserted and revised in the same batch is
written once, with its final values), then flushed table by table. Applying a log in one
batch or in many gives the same rows, which the rebuild property test checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, Final
from uuid import UUID

from sqlalchemy import (
    Connection,
    UpdateBase,
    and_,
    bindparam,
    insert,
    select,
    type_coerce,
    update,
)
from sqlalchemy.dialects.postgresql import Insert as PostgreSQLInsert
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import Insert as SQLiteInsert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.types import NullType

from apexmem.projections.communities import CommunityChange
from apexmem.projections.episodes import Linked
from apexmem.projections.graph import Change, Insert, Retrieved, Revise, Touch
from apexmem.projections.usage import CountsDecayed
from apexmem.readmodels import fulltext, fulltext_pg
from apexmem.readmodels.bulk import write_rows
from apexmem.readmodels.community_apply import apply_community_changes
from apexmem.readmodels.prepared import Prepared
from apexmem.readmodels.tables import (
    entities,
    entity_archives,
    facts,
    metadata,
    retrievals,
)
from apexmem.readmodels.usage import apply_decay

__all__ = ["apply_changes"]

_TABLES = {table.name: table for table in metadata.sorted_tables}


class _Batch:
    """One batch's rows, folded in memory. Ids are keyed by `UUID.int`: a UUID's hash runs in
    Python, and a catch-up looks up several per event."""

    def __init__(self) -> None:
        self.inserts: dict[str, list[dict[str, Any]]] = {}
        self.new_entities: dict[int, dict[str, Any]] = {}
        self.touched: dict[int, tuple[UUID, dict[str, Any]]] = {}
        """Entity -> (its id, the columns this batch changes)."""
        self.open_facts: dict[int, dict[str, Any]] = {}
        self.new_facts: list[dict[str, Any]] = []
        """The first state row of each fact version this batch asserts, and of each state a
        reinforcement gave another sentence (its position, fact_id and fact at least)."""
        self.expired: list[dict[str, Any]] = []
        """Open rows loaded from the database that this batch closes."""
        self.retrieved: dict[int, tuple[int, Any]] = {}
        """Fact version -> (times returned by recalls in this batch, the last time)."""
        self.episodes: dict[int, dict[str, Any]] = {}
        self.links: dict[tuple[int, int], dict[str, Any]] = {}
        """The first event of this batch that named each episode, and each (episode, entity)."""
        self.communities: list[CommunityChange] = []
        self.archives: dict[int, dict[str, Any]] = {}
        """The last archive interval this batch opened for each entity."""
        self.seen: dict[int, Any] = {}
        """Each entity observed in this batch outside an archive it opened -> the first time:
        when an archive left open by an earlier batch ended, if one did."""


def apply_changes(connection: Connection, changes: Sequence[Change]) -> None:
    """Write `changes` (in log order) inside the caller's transaction."""
    batch = _Batch()
    _load_open_facts(connection, changes, batch)
    for change in changes:
        if isinstance(change, Insert):
            _insert(batch, change)
        elif isinstance(change, Revise):
            _revise(batch, change)
        elif isinstance(change, Touch):
            _touch(batch, change)
        elif isinstance(change, Retrieved):
            _retrieved(batch, change)
        elif isinstance(change, Linked):
            _linked(batch, change)
        elif isinstance(change, CountsDecayed):
            _decay(connection, batch, change)
        else:
            batch.communities.append(change)
    _flush(connection, batch)


def _load_open_facts(connection: Connection, changes: Sequence[Change], batch: _Batch) -> None:
    """The open rows of versions revised by this batch but inserted by an earlier one.

    Their columns stay as the driver returned them (ids and times included): they are
    only copied into the next version's row and written back, which `_compile` allows for.
    """
    revised = {c.fact_id.int: c.fact_id for c in changes if isinstance(c, Revise)}
    for c in changes:
        if isinstance(c, Insert) and c.table == "facts":
            revised.pop(c.row["fact_id"].int, None)
    wanted = list(revised.values())
    for i in range(0, len(wanted), 500):
        for fact_id, *values in connection.execute(_OPEN_ROWS, {"ids": wanted[i : i + 500]}):
            row = dict(zip(_FACT_COLUMNS, values, strict=True))
            row["_stored"] = True
            batch.open_facts[fact_id.int] = row


_FACT_COLUMNS: Final = [c.name for c in facts.c]
_OPEN_ROWS: Final = select(
    facts.c.fact_id, *(type_coerce(c, NullType()).label(c.name) for c in facts.c)
).where(
    facts.c.fact_id.in_(bindparam("ids", expanding=True)),
    facts.c.expired_at.is_(None),
)
"""The open rows of some fact versions, each column as stored (the id as a UUID)."""


def _insert(batch: _Batch, change: Insert) -> None:
    row = dict(change.row)
    batch.inserts.setdefault(change.table, []).append(row)
    if change.table == "facts":
        batch.open_facts[row["fact_id"].int] = row
        batch.new_facts.append(row)
    elif change.table == "entities":
        batch.new_entities[row["entity_id"].int] = row
    elif change.table == "entity_archives":
        batch.archives[row["entity_id"].int] = row


def _revise(batch: _Batch, change: Revise) -> None:
    key = change.fact_id.int
    current = batch.open_facts.get(key)
    if current is None:  # a revision of a version this read model never saw: nothing to show
        return
    current["expired_at"] = change.at
    if current.pop("_stored", False):
        batch.expired.append(
            {
                "b_fact_id": current["fact_id"],
                "b_position": current["position"],
                "b_expired_at": change.at,
            }
        )
    told = change.values.get("fact")
    if told is not None and told != current["fact"]:  # the version reads otherwise from here
        batch.new_facts.append(
            {"position": change.position, "fact_id": change.fact_id, "fact": told}
        )
    row = {
        **current,
        **change.values,
        "position": change.position,
        "recorded_at": change.at,
        "expired_at": None,
    }
    if row["standing"] == "archived" and "observed_at" in change.values:
        row["standing"] = "believed"  # observed again (a reinforcement): an evicted version is back
        seen = {"last_seen": change.at, "archived_at": None}  # and so are its ends, as by an assert
        for end in (row["subject_id"], row["object_id"]):
            if end is not None:
                _touch(batch, Touch(end if isinstance(end, UUID) else UUID(hex=end), seen))
    batch.inserts.setdefault("facts", []).append(row)
    batch.open_facts[key] = row


def _ignoring_duplicates(connection: Connection, name: str) -> Any:
    dialect = connection.dialect.name
    if dialect == "sqlite":
        return sqlite_insert(_TABLES[name]).on_conflict_do_nothing()
    if dialect == "postgresql":
        return postgresql_insert(_TABLES[name]).on_conflict_do_nothing()
    raise NotImplementedError(f"read models on {dialect}")


def _touch(batch: _Batch, change: Touch) -> None:
    entity_id, values = change.entity_id, change.values
    key = entity_id.int
    if "archived_at" in values and values["archived_at"] is None:  # observed: not archived
        archive = batch.archives.get(key)
        if archive is None:
            batch.seen.setdefault(key, values["last_seen"])
        elif archive["revived_at"] is None:
            archive["revived_at"] = values["last_seen"]
    target = batch.new_entities.get(key)
    if target is None:
        touched = batch.touched.get(key)
        if touched is None:
            touched = batch.touched[key] = (entity_id, {})
        target = touched[1]
    target.update(values)


def _retrieved(batch: _Batch, change: Retrieved) -> None:
    retrieved, at = batch.retrieved, change.at
    for fact_id in change.fact_ids:
        key = fact_id.int
        found = retrieved.get(key)
        retrieved[key] = (1 if found is None else found[0] + 1, at)


def _linked(batch: _Batch, change: Linked) -> None:
    """Keep the first event that named an episode or linked an entity to it (in log order);
    the rows are inserted ignoring those already stored, so the first event ever wins."""
    episode = change.episode_id
    episode_key = episode.int
    if change.conversation is not None and episode_key not in batch.episodes:
        batch.episodes[episode_key] = {
            "episode_id": episode,
            "conversation": change.conversation,
            "started_at": change.at,
            "position": change.position,
        }
    entities = change.entity_ids
    if change.fact_id is not None:
        ends = batch.open_facts.get(change.fact_id.int)
        if ends is not None:  # loaded rows hold ids as stored (hex), new ones as UUIDs
            entities += tuple(
                e if isinstance(e, UUID) else UUID(hex=e)
                for e in (ends["subject_id"], ends["object_id"])
                if e is not None
            )
    links = batch.links
    for entity in entities:
        key = (episode_key, entity.int)
        if key not in links:
            links[key] = {
                "episode_id": episode,
                "entity_id": entity,
                "linked_at": change.at,
                "position": change.position,
            }


def _decay(connection: Connection, batch: _Batch, change: CountsDecayed) -> None:
    """A decay pass applies to every retrieval before it: count this batch's first."""
    if batch.retrieved:
        _count_retrievals(connection, batch)
        batch.retrieved.clear()
    apply_decay(connection, change)


def _count_retrievals(connection: Connection, batch: _Batch) -> None:
    """Add this batch's retrievals to the counts: one upsert per fact, a fact once (on
    PostgreSQL one statement over arrays, `bulk.write_rows`).

    (Reading the counts first and writing them whole took ~10 ms for the 32 recalls of a
    usage batch, inside the recall that flushed it. On PostgreSQL an executemany is a
    statement per fact on the server: 8.3 ms for a usage batch's 320 facts at 1,000,000
    facts, 3.3 ms as one statement.)
    """
    rows = [
        {"fact_id": f"{f:032x}", "count": float(n), "last_retrieved_at": at}  # as stored
        for f, (n, at) in batch.retrieved.items()
    ]
    statement = partial(_recount_statement, connection)
    write_rows(connection, "recount", statement, rows, distinct=True)


def _recount_statement(connection: Connection) -> UpdateBase:
    """Insert a fact's count, or add it to the stored one (the latest time wins: log order)."""
    dialect = connection.dialect.name
    statement: SQLiteInsert | PostgreSQLInsert
    if dialect == "sqlite":
        statement = sqlite_insert(retrievals)
    elif dialect == "postgresql":
        statement = postgresql_insert(retrievals)
    else:
        raise NotImplementedError(f"read models on {dialect}")
    return statement.on_conflict_do_update(
        index_elements=[retrievals.c.fact_id],
        set_={
            "count": retrievals.c.count + statement.excluded.count,
            "last_retrieved_at": statement.excluded.last_retrieved_at,
        },
    )


def _flush(connection: Connection, batch: _Batch) -> None:
    if batch.seen:  # before this batch's archives are written: they are not ended by it
        _end_archives(connection, batch.seen)
    if batch.episodes:
        batch.inserts["episodes"] = list(batch.episodes.values())
    if batch.links:
        batch.inserts["episode_entities"] = list(batch.links.values())
    if batch.expired:
        write_rows(connection, "expire", _expire_statement, batch.expired)
    for name, rows in batch.inserts.items():
        write_rows(connection, name, partial(_insert_statement, connection, name), rows)
    by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for entity_id, values in batch.touched.values():
        row = {"b_id": entity_id, **{f"v_{k}": v for k, v in values.items()}}
        by_columns.setdefault(tuple(sorted(values)), []).append(row)
    for columns, rows in by_columns.items():
        write_rows(connection, columns, partial(_touch_statement, columns), rows)
    if batch.retrieved:
        _count_retrievals(connection, batch)
    if batch.communities:
        apply_community_changes(connection, batch.communities)
    summaries = [(e, v["summary"]) for e, v in batch.touched.values() if "summary" in v]
    on_postgres = connection.dialect.name == "postgresql"
    (fulltext_pg if on_postgres else fulltext).index(
        connection,
        fulltext.Rows(
            entities=list(batch.new_entities.values()),
            aliases=batch.inserts.get("aliases", []),
            summaries=summaries,
            facts=batch.new_facts,
            messages=batch.inserts.get("messages", []),
        ),
    )


def _end_archives(connection: Connection, seen: dict[int, Any]) -> None:
    """End the archives earlier batches left open of the entities this batch observed."""
    # Asked through the driver: every inline write flushes, and the usual answer is none.
    if not _ANY_OPEN_ARCHIVE.rows(connection, {}):
        return
    open_ids = connection.execute(_OPEN_ARCHIVES).scalars()
    ended = [{"b_id": e, "b_at": seen[e.int]} for e in open_ids if e.int in seen]
    if ended:
        write_rows(connection, "end_archives", _end_archive_statement, ended)


_ANY_OPEN_ARCHIVE: Final = Prepared(
    lambda: (
        select(entity_archives.c.entity_id).where(entity_archives.c.revived_at.is_(None)).limit(1)
    )
)
_OPEN_ARCHIVES: Final = select(entity_archives.c.entity_id).where(
    entity_archives.c.revived_at.is_(None)
)


def _end_archive_statement() -> UpdateBase:
    return (
        update(entity_archives)
        .where(
            and_(
                entity_archives.c.entity_id == bindparam("b_id"),
                entity_archives.c.revived_at.is_(None),
            )
        )
        .values(revived_at=bindparam("b_at"))
    )


def _expire_statement() -> UpdateBase:
    return (
        update(facts)
        .where(
            and_(
                facts.c.fact_id == bindparam("b_fact_id"),
                facts.c.position == bindparam("b_position"),
            )
        )
        .values(expired_at=bindparam("b_expired_at"))
    )


def _insert_statement(connection: Connection, name: str) -> UpdateBase:
    statement: UpdateBase = insert(_TABLES[name])
    if name in _FIRST_WINS:
        statement = _ignoring_duplicates(connection, name)
    return statement


_FIRST_WINS: Final = frozenset({"mentions", "episodes", "episode_entities", "extractions"})
"""Tables whose rows say "the first event that ...": a later one that says it again is ignored
(a message may name an entity in several events; every fact of an episode names it again)."""


def _touch_statement(columns: tuple[str, ...]) -> UpdateBase:
    return (
        update(entities)
        .where(entities.c.entity_id == bindparam("b_id"))
        .values({c: bindparam(f"v_{c}") for c in columns})
    )
