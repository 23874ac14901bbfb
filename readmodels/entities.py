"""Entity lookup: exact names first (display, canonical, alias), then a prefix match.

Merges are followed: a name of an entity merged forward resolves to the entity it was
merged into, and that entity's group holds every entity merged into it (as known at S).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final
from uuid import UUID

import msgspec
from sqlalchemy import Column, ColumnElement, Connection, and_, exists, or_, select

from apexmem.domain.merges import merge_roots
from apexmem.domain.names import normalize
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
    ids = _alias_owners(connection, aliases.c.alias == key, known_at, entity_type, limit)
    if not ids:
        prefix = and_(aliases.c.alias >= key, aliases.c.alias < key + _PREFIX_END)
        ids = _alias_owners(connection, prefix, known_at, entity_type, limit)
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
    match: Any,
    known_at: datetime | None,
    entity_type: str | None,
    limit: int,
) -> list[UUID]:
    statement = select(aliases.c.entity_id).where(match)
    if known_at is not None:
        statement = statement.where(aliases.c.recorded_at <= known_at)
    if entity_type is not None:
        statement = statement.where(aliases.c.entity_type == entity_type)
    statement = statement.order_by(aliases.c.alias, aliases.c.entity_type).limit(limit * 4)
    owners = list(dict.fromkeys(connection.execute(statement).scalars()))
    return owners[:limit]


def _merged_into(
    connection: Connection, ids: list[UUID], known_at: datetime | None
) -> dict[UUID, UUID]:
    """The merges followed forward from `ids` (entity -> the entity it was merged into)."""
    into: dict[UUID, UUID] = {}
    frontier = ids
    while frontier:
        step = {
            r.entity_id: r.merged_into
            for r in _merge_rows(connection, entities.c.entity_id, frontier, known_at)
        }
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
            r
            for r in _merge_rows(connection, entities.c.merged_into, frontier, known_at)
            if r.entity_id not in owner_of
        ]
        for r in found:
            owner_of[r.entity_id] = owner_of[r.merged_into]
            groups.setdefault(owner_of[r.entity_id], []).append(r.entity_id)
        frontier = [r.entity_id for r in found]
    return groups


def _merge_rows(
    connection: Connection, column: Column[Any], ids: list[UUID], known_at: datetime | None
) -> list[Any]:
    """Entities merged by `known_at` whose `column` (their own id, or the entity they were
    merged into) is in `ids`, in merge order. Either way an index answers: the primary key,
    or the partial index of merged entities."""
    rows: list[Any] = []
    for i in range(0, len(ids), _CHUNK):
        statement = select(entities.c.entity_id, entities.c.merged_into).where(
            column.in_(ids[i : i + _CHUNK]), entities.c.merged_into.is_not(None)
        )
        if known_at is not None:
            statement = statement.where(entities.c.merged_at <= known_at)
        statement = statement.order_by(entities.c.merged_at, entities.c.entity_id)
        rows.extend(connection.execute(statement))
    return rows


def _rows(
    connection: Connection,
    groups: dict[UUID, list[UUID]],
    known_at: datetime | None,
    *,
    include_archived: bool = False,
) -> list[EntityRow]:
    if not groups:
        return []
    statement = select(entities).where(entities.c.entity_id.in_(list(groups)))
    if known_at is not None:
        statement = statement.where(entities.c.first_seen <= known_at)
    if not include_archived:
        statement = statement.where(_not_archived(known_at))
    found = {r.entity_id: r for r in connection.execute(statement)}
    names = _alias_names(connection, [m for g in groups.values() for m in g], known_at)
    rows = []
    for root, members in groups.items():
        if root not in found:
            continue
        row = found[root]
        rows.append(
            msgspec.convert(
                {
                    **{str(k): v for k, v in row._mapping.items()},
                    "aliases": sorted({n for m in members for n in names.get(m, [])}),
                    "merged": members[1:],
                },
                EntityRow,
                from_attributes=True,
            )
        )
    return rows


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
    statement = select(aliases.c.entity_id, aliases.c.name).where(aliases.c.entity_id.in_(ids))
    if known_at is not None:
        statement = statement.where(aliases.c.recorded_at <= known_at)
    names: dict[UUID, list[str]] = {}
    for r in connection.execute(statement):
        names.setdefault(r.entity_id, []).append(r.name)
    return names
