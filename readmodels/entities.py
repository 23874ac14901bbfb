"""Entity lookup: exact names first (display, canonical, alias), then a prefix match.

Merges are followed: a name of an entity merged forward resolves to the entity it was
merged into, and that entity's group holds every entity merged into it (as known at S).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final
from uuid import UUID

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Integer,
    Select,
    and_,
    bindparam,
    exists,
    or_,
    select,
)

from apexmem.domain.merges import merge_roots
from apexmem.domain.names import normalize
from apexmem.readmodels.prepared import (
    Prepared,
    as_stored,
    id_of,
    stored_column,
    stored_times,
    value_of,
)
from apexmem.readmodels.rows import EntityRow
from apexmem.readmodels.tables import aliases, entities, entity_archives

__all__ = ["all_entities", "entity_groups", "find_entities", "names_of", "roots_of"]

_PREFIX_END: Final = "\U0010ffff"
_CHUNK: Final = 500


def find_entities(
    connection: Connection,
    query: str,
    *,
    known_at: datetime | None = None,
    entity_type: str | None = None,
    limit: int = 20,
    include_archived: bool = False,
) -> list[EntityRow]:
    """Entities named `query` exactly (any case), else those with a name starting with it.

    Archived (evicted) entities are left out unless `include_archived` (history wants them).
    """
    key = normalize(query)
    if not key:
        return []
    ids = _alias_owners(
        connection, key, end=None, known_at=known_at, entity_type=entity_type, limit=limit
    )
    if not ids:
        ids = _alias_owners(
            connection,
            key,
            end=key + _PREFIX_END,
            known_at=known_at,
            entity_type=entity_type,
            limit=limit,
        )
    groups = entity_groups(connection, ids, known_at=known_at)
    return _rows(connection, groups, known_at, include_archived=include_archived)


def all_entities(
    connection: Connection,
    *,
    known_at: datetime | None = None,
    entity_type: str | None = None,
    limit: int = 50,
) -> list[EntityRow]:
    """Entities in name order (merged ones inside the entity they were merged into)."""
    statement = select(entities.c.entity_id)
    if known_at is None:
        statement = statement.where(entities.c.merged_into.is_(None))
    else:
        statement = statement.where(
            entities.c.first_seen <= known_at,
            or_(entities.c.merged_at.is_(None), entities.c.merged_at > known_at),
        )
    if entity_type is not None:
        statement = statement.where(entities.c.entity_type == entity_type)
    # Archived entities are left out by _rows; asking for a few extra keeps the page full.
    statement = statement.order_by(
        entities.c.canonical_name, entities.c.entity_type, entities.c.entity_id
    ).limit(limit * 2)
    ids = list(connection.execute(statement).scalars())
    groups = entity_groups(connection, ids, known_at=known_at)
    return _rows(connection, groups, known_at)[:limit]


def entity_groups(
    connection: Connection, ids: Iterable[UUID], *, known_at: datetime | None = None
) -> dict[UUID, list[UUID]]:
    """Each id's merge root (in first-seen order) -> every entity that resolves to that root.

    Only the merges on the way (forward from `ids`, then back from their roots) are read.
    """
    roots = list(dict.fromkeys(roots_of(connection, ids, known_at=known_at).values()))
    groups: dict[UUID, list[UUID]] = {r: [r] for r in roots}
    for owner, members in _merged_from(connection, roots, known_at).items():
        groups[owner].extend(m for m in members if m != owner)
    return groups


def roots_of(
    connection: Connection, ids: Iterable[UUID], *, known_at: datetime | None = None
) -> dict[UUID, UUID]:
    """Each id (once, in order) -> the entity it resolves to by the merges known at `known_at`.

    Only the merges on the way are read: forward from `ids`, in batches.
    """
    wanted = list(dict.fromkeys(ids))
    return merge_roots(_merged_into(connection, wanted, known_at), wanted)


def names_of(connection: Connection, ids: Iterable[UUID]) -> dict[UUID, tuple[str, str]]:
    """Display name and type of each entity id."""
    wanted = list(set(ids))
    found: dict[UUID, tuple[str, str]] = {}
    for i in range(0, len(wanted), 500):
        rows = connection.execute(
            select(entities.c.entity_id, entities.c.name, entities.c.entity_type).where(
                entities.c.entity_id.in_(wanted[i : i + 500])
            )
        )
        found.update((r.entity_id, (r.name, r.entity_type)) for r in rows)
    return found


def _alias_owners(
    connection: Connection,
    key: str,
    *,
    end: str | None,
    known_at: datetime | None,
    entity_type: str | None,
    limit: int,
) -> list[UUID]:
    """The entities with the name `key` (or, with `end`, a name in [key, end)), in name order."""
    params = {"key": key, "end": end, "entity_type": entity_type, "limit": limit * 4}
    params.update(stored_times(None, known_at))
    shape = (end is not None, known_at is not None, entity_type is not None)
    owners = list(dict.fromkeys(row[0] for row in _OWNERS.rows(connection, params, *shape)))
    return [id_of(owner) for owner in owners[:limit]]


def _owners(ranged: bool, known: bool, typed: bool) -> Select[Any]:
    """The owners of the names `key` (or those in [key, end) when `ranged`), known at
    `known_at` when `known`, of `entity_type` when `typed`: `limit` of them."""
    name = aliases.c.alias
    match = (
        and_(name >= bindparam("key"), name < bindparam("end"))
        if ranged
        else name == bindparam("key")
    )
    statement = select(as_stored(aliases.c.entity_id)).where(match)
    if known:
        statement = statement.where(
            aliases.c.recorded_at <= bindparam("known_at", type_=BigInteger)
        )
    if typed:
        statement = statement.where(aliases.c.entity_type == bindparam("entity_type"))
    ordered = statement.order_by(aliases.c.alias, aliases.c.entity_type)
    return ordered.limit(bindparam("limit", type_=Integer))


_OWNERS: Final = Prepared(_owners, keyed=True)


def _merged_into(
    connection: Connection, ids: list[UUID], known_at: datetime | None
) -> dict[UUID, UUID]:
    """The merges followed forward from `ids` (entity -> the entity it was merged into)."""
    into: dict[UUID, UUID] = {}
    frontier = ids
    while frontier:
        step = dict(_merge_rows(connection, True, frontier, known_at))
        into.update(step)
        frontier = [e for e in dict.fromkeys(step.values()) if e not in into]
    return into


def _merged_from(
    connection: Connection, roots: list[UUID], known_at: datetime | None
) -> dict[UUID, list[UUID]]:
    """Each root -> the entities merged into it, directly or through others (merge order)."""
    groups: dict[UUID, list[UUID]] = {}
    owner_of = {r: r for r in roots}
    frontier = roots
    while frontier:
        found = [
            (entity, into)
            for entity, into in _merge_rows(connection, False, frontier, known_at)
            if entity not in owner_of
        ]
        for entity, into in found:
            owner_of[entity] = owner_of[into]
            groups.setdefault(owner_of[entity], []).append(entity)
        frontier = [entity for entity, _ in found]
    return groups


def _merge_rows(
    connection: Connection, forward: bool, ids: list[UUID], known_at: datetime | None
) -> list[tuple[UUID, UUID]]:
    """(entity, the entity it was merged into) of the entities merged by `known_at` that are
    among `ids` (`forward`) or were merged into one of them, in merge order."""
    rows: list[tuple[UUID, UUID]] = []
    params: dict[str, Any] = {**stored_times(None, known_at)}
    stored = [i.hex for i in ids]
    for i in range(0, len(stored), _CHUNK):
        params["ids"] = stored[i : i + _CHUNK]
        found = _MERGES.rows(connection, params, forward, known_at is not None)
        rows.extend((id_of(entity), id_of(into)) for entity, into in found)
    return rows


def _merges(forward: bool, known: bool) -> Select[Any]:
    """The merges of `_merge_rows`. Either way an index answers: the primary key, or the
    partial index of merged entities."""
    column = entities.c.entity_id if forward else entities.c.merged_into
    statement = select(as_stored(entities.c.entity_id), as_stored(entities.c.merged_into)).where(
        as_stored(column).in_(bindparam("ids", expanding=True)),
        entities.c.merged_into.is_not(None),
    )
    if known:
        statement = statement.where(entities.c.merged_at <= bindparam("known_at", type_=BigInteger))
    return statement.order_by(entities.c.merged_at, entities.c.entity_id)


_MERGES: Final = Prepared(_merges, keyed=True)


def _rows(
    connection: Connection,
    groups: dict[UUID, list[UUID]],
    known_at: datetime | None,
    *,
    include_archived: bool = False,
) -> list[EntityRow]:
    if not groups:
        return []
    params: dict[str, Any] = {"ids": [g.hex for g in groups], **stored_times(None, known_at)}
    shape = (known_at is not None, include_archived)
    found = {}
    for stored in _ENTITY_ROWS.rows(connection, params, *shape):
        values = {
            name: value if convert is None else convert(value)
            for (name, convert), value in zip(_ENTITY_VALUES, stored, strict=True)
        }
        found[values["entity_id"]] = values
    names = _alias_names(connection, [m for g in groups.values() for m in g], known_at)
    rows = []
    for root, members in groups.items():
        if root not in found:
            continue
        aliases_of = sorted({n for m in members for n in names.get(m, [])})
        rows.append(EntityRow(**found[root], aliases=aliases_of, merged=members[1:]))
    return rows


_ENTITY_COLUMNS: Final = [
    entities.c[name] for name in EntityRow.__struct_fields__ if name in entities.c
]
_ENTITY_VALUES: Final = [(c.name, value_of(c)) for c in _ENTITY_COLUMNS]


def _entity_rows(known: bool, archived: bool) -> Select[Any]:
    """The rows of `_rows`: the entities `ids` as stored, first seen by `known_at` when
    `known`, archived ones too when `archived`."""
    statement = select(*(stored_column(c) for c in _ENTITY_COLUMNS)).where(
        as_stored(entities.c.entity_id).in_(bindparam("ids", expanding=True))
    )
    known_at = bindparam("known_at", type_=BigInteger)
    if known:
        statement = statement.where(entities.c.first_seen <= known_at)
    if not archived:
        statement = statement.where(
            ~archived_then(known_at) if known else entities.c.archived_at.is_(None)
        )
    return statement


_ENTITY_ROWS: Final = Prepared(_entity_rows, keyed=True)


def _not_archived(known_at: datetime | None) -> ColumnElement[bool]:
    """Not archived now, or not archived as known at `known_at`."""
    if known_at is None:
        return entities.c.archived_at.is_(None)
    return ~archived_then(known_at)


def archived_then(known_at: Any) -> ColumnElement[bool]:
    """An `entities` row's entity was archived as known at `known_at` (a time, or a bound
    parameter): an archive recorded by then that no observation recorded by then ended.

    Not `entities.archived_at`: an entity observed again is no longer archived now, and was
    during its archive.
    """
    archive = entity_archives.c
    return exists().where(
        archive.entity_id == entities.c.entity_id,
        archive.archived_at <= known_at,
        or_(archive.revived_at.is_(None), archive.revived_at > known_at),
    )


def _alias_names(
    connection: Connection, ids: list[UUID], known_at: datetime | None
) -> dict[UUID, list[str]]:
    params = {"ids": [i.hex for i in ids], **stored_times(None, known_at)}
    names: dict[UUID, list[str]] = {}
    for owner, name in _NAMES.rows(connection, params, known_at is not None):
        names.setdefault(id_of(owner), []).append(name)
    return names


def _names(known: bool) -> Select[Any]:
    """The names of the entities `ids` (known at `known_at` when `known`)."""
    statement = select(as_stored(aliases.c.entity_id), aliases.c.name).where(
        as_stored(aliases.c.entity_id).in_(bindparam("ids", expanding=True))
    )
    if known:
        statement = statement.where(
            aliases.c.recorded_at <= bindparam("known_at", type_=BigInteger)
        )
    return statement


_NAMES: Final = Prepared(_names, keyed=True)
