"""Applying community events to the read models, in log order (see projections.communities).

A formation upserts the community's row and moves its membership to the detected members
(members kept stay untouched, members gone are closed); a dissolution closes every open
membership; an assignment adds one member and marks the summary stale. Rows are never
deleted, so an applied log leaves the same rows however it was batched.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Final
from uuid import UUID

from sqlalchemy import Connection, insert, select, update

from apexmem.projections.communities import Assigned, CommunityChange, Dissolved, Formed
from apexmem.readmodels.tables import communities, community_members

__all__ = ["apply_community_changes"]

_CHUNK: Final = 400


def apply_community_changes(connection: Connection, changes: Sequence[CommunityChange]) -> None:
    """Apply formations, dissolutions and assignments in log order (caller's transaction)."""
    for change in changes:
        if isinstance(change, Formed):
            _form(connection, change)
        elif isinstance(change, Dissolved):
            _dissolve(connection, change)
        else:
            _assign(connection, change)


def _form(connection: Connection, change: Formed) -> None:
    values = {
        "fingerprint": change.fingerprint,
        "name": change.name,
        "summary": change.summary,
        "summarizer": change.summarizer,
        "stale": False,
        "version": change.version,
        "position": change.position,
    }
    dissolved = connection.execute(
        select(communities.c.dissolved_at).where(communities.c.community_id == change.community_id)
    ).one_or_none()
    formed = {"formed_at": change.at, "formed_position": change.position, "dissolved_at": None}
    if dissolved is None:
        connection.execute(
            insert(communities).values(community_id=change.community_id, **values, **formed)
        )
    else:
        if dissolved.dissolved_at is not None:  # formed again after it was dissolved
            values.update(formed)
        connection.execute(
            update(communities)
            .where(communities.c.community_id == change.community_id)
            .values(values)
        )
    current = set(_open_members(connection, change.community_id))
    wanted = set(change.entity_ids)
    _leave(connection, change.community_id, current - wanted, change.at)
    joining = [e for e in change.entity_ids if e not in current]
    if joining:
        connection.execute(
            insert(community_members),
            [
                {
                    "community_id": change.community_id,
                    "entity_id": e,
                    "position": change.position,
                    "joined_at": change.at,
                    "left_at": None,
                    "assigned": False,
                }
                for e in joining
            ],
        )


def _dissolve(connection: Connection, change: Dissolved) -> None:
    connection.execute(
        update(communities)
        .where(communities.c.community_id == change.community_id)
        .values(dissolved_at=change.at, version=change.version, position=change.position)
    )
    _leave(
        connection, change.community_id, _open_members(connection, change.community_id), change.at
    )


def _assign(connection: Connection, change: Assigned) -> None:
    connection.execute(
        update(communities)
        .where(communities.c.community_id == change.community_id)
        .values(stale=True, version=change.version, position=change.position)
    )
    if change.entity_id in _open_members(connection, change.community_id):
        return
    connection.execute(
        insert(community_members).values(
            community_id=change.community_id,
            entity_id=change.entity_id,
            position=change.position,
            joined_at=change.at,
            left_at=None,
            assigned=True,
        )
    )


def _open_members(connection: Connection, community: UUID) -> list[UUID]:
    return list(
        connection.execute(
            select(community_members.c.entity_id).where(
                community_members.c.community_id == community,
                community_members.c.left_at.is_(None),
            )
        ).scalars()
    )


def _leave(connection: Connection, community: UUID, members: Iterable[UUID], at: datetime) -> None:
    leaving = sorted(members)
    for i in range(0, len(leaving), _CHUNK):
        connection.execute(
            update(community_members)
            .where(
                community_members.c.community_id == community,
                community_members.c.entity_id.in_(leaving[i : i + _CHUNK]),
                community_members.c.left_at.is_(None),
            )
            .values(left_at=at)
        )
