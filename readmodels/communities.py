"""Communities in the read models: the graph a detection reads (edges in chunks), and the
questions asked of them (who belongs where, the list). Their events are applied by
`community_apply`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Final
from uuid import UUID

import msgspec
from sqlalchemy import Connection, bindparam, func, or_, select

from apexmem.domain.communities import GraphEdge, Node, StoredCommunity
from apexmem.domain.summaries import DraftFact, DraftMember
from apexmem.readmodels.prepared import Prepared, as_stored
from apexmem.readmodels.tables import communities, community_members, entities, facts

__all__ = [
    "CommunityMember",
    "CommunityRow",
    "active_edges",
    "communities_of",
    "community_count",
    "community_ranks",
    "community_versions",
    "draft_facts",
    "draft_members",
    "list_communities",
    "live_nodes",
    "memberships",
    "merged_into",
    "stored_communities",
]

_CHUNK: Final = 400
_LARGEST: Final = 2**63 - 1
"""The largest integer SQLite binds: a larger limit asks for no more than this one does."""
_NO_ID: Final = UUID(int=0)
"""Below every fact id (ids are uuid5, never zero): where the first chunk of edges starts."""


class CommunityMember(msgspec.Struct, frozen=True, kw_only=True):
    """A member of a community, with its number of active edges (its degree)."""

    entity_id: UUID
    name: str
    entity_type: str
    degree: int
    assigned: bool
    """Joined by a neighbour vote after the community's summary was written."""


class CommunityRow(msgspec.Struct, frozen=True, kw_only=True):
    """A live community: its name, recorded summary, size and best-connected members."""

    community_id: UUID
    name: str
    summary: str
    summarizer: str
    fingerprint: str
    size: int
    stale: bool
    """Members were assigned since the summary; the next detection writes a new one."""
    formed_at: datetime
    top_members: list[CommunityMember]


# What a detection reads --------------------------------------------------------------------


def live_nodes(connection: Connection) -> list[Node]:
    """Entities that can belong to a community (not merged away, not archived), by first event."""
    rows = connection.execute(
        select(entities.c.entity_id, entities.c.position, entities.c.name)
        .where(entities.c.merged_into.is_(None), entities.c.archived_at.is_(None))
        .order_by(entities.c.position)
    )
    return [Node(r.entity_id, r.position, r.name) for r in rows]


def merged_into(connection: Connection) -> dict[UUID, UUID]:
    """Each entity merged forward -> the entity it was merged into."""
    rows = connection.execute(
        select(entities.c.entity_id, entities.c.merged_into).where(
            entities.c.merged_into.is_not(None)
        )
    )
    return {r.entity_id: r.merged_into for r in rows}


_first_state = facts.alias("first_state")
_EDGES: Final = (
    select(
        facts.c.fact_id,
        facts.c.subject_id,
        facts.c.object_id,
        select(func.min(_first_state.c.position))
        .where(_first_state.c.fact_id == facts.c.fact_id)
        .scalar_subquery()
        .label("key"),
    )
    .where(
        facts.c.fact_id > bindparam("after"),
        facts.c.expired_at.is_(None),
        facts.c.standing == "believed",
        facts.c.valid_until.is_(None),
        facts.c.object_id.is_not(None),
    )
    .order_by(facts.c.fact_id)
    .limit(bindparam("chunk"))
)
"""One chunk of active edges after a fact id; an edge's key is the position it was asserted at."""


def active_edges(connection: Connection, chunk: int) -> Iterator[GraphEdge]:
    """Every active edge (believed, open-ended, between two entities), read `chunk` at a time.

    Keyset pagination by fact id: each query starts after the last id of the one before,
    so no chunk is read twice and memory holds one chunk of rows at a time.
    """
    if chunk < 1:
        raise ValueError(f"chunk must be 1 or more, got {chunk}")
    after = _NO_ID
    while True:
        rows = connection.execute(_EDGES, {"after": after, "chunk": chunk}).all()
        for r in rows:
            yield GraphEdge(r.fact_id, r.key, r.subject_id, r.object_id)
        if len(rows) < chunk:
            return
        after = rows[-1].fact_id


def stored_communities(connection: Connection) -> list[StoredCommunity]:
    """The live communities (not dissolved)."""
    rows = connection.execute(
        select(communities.c.community_id, communities.c.fingerprint, communities.c.stale).where(
            communities.c.dissolved_at.is_(None)
        )
    )
    return [
        StoredCommunity(community_id=r.community_id, fingerprint=r.fingerprint, stale=r.stale)
        for r in rows
    ]


def community_versions(connection: Connection, ids: Iterable[UUID]) -> dict[UUID, int]:
    """The stream version each community's row has applied (absent: no event yet)."""
    wanted = list(dict.fromkeys(ids))
    found: dict[UUID, int] = {}
    for i in range(0, len(wanted), _CHUNK):
        rows = connection.execute(
            select(communities.c.community_id, communities.c.version).where(
                communities.c.community_id.in_(wanted[i : i + _CHUNK])
            )
        )
        found.update((r.community_id, r.version) for r in rows)
    return found


def community_ranks(connection: Connection) -> dict[UUID, tuple[int, str]]:
    """Each live community's tie-break rank for votes: formed first, then by id."""
    rows = connection.execute(
        select(communities.c.community_id, communities.c.formed_position).where(
            communities.c.dissolved_at.is_(None)
        )
    )
    return {r.community_id: (r.formed_position, r.community_id.hex) for r in rows}


def memberships(connection: Connection) -> dict[UUID, UUID]:
    """Every member of a live community -> that community."""
    rows = connection.execute(
        select(community_members.c.entity_id, community_members.c.community_id)
        .where(community_members.c.left_at.is_(None))
        .order_by(community_members.c.position)
    )
    return {r.entity_id: r.community_id for r in rows}


def draft_members(connection: Connection, ids: Iterable[UUID]) -> dict[UUID, DraftMember]:
    """Names, types and keys of entities, for summaries."""
    wanted = list(dict.fromkeys(ids))
    found: dict[UUID, DraftMember] = {}
    for i in range(0, len(wanted), _CHUNK):
        rows = connection.execute(
            select(
                entities.c.entity_id, entities.c.name, entities.c.entity_type, entities.c.position
            ).where(entities.c.entity_id.in_(wanted[i : i + _CHUNK]))
        )
        for r in rows:
            found[r.entity_id] = DraftMember(
                entity_id=r.entity_id, name=r.name, entity_type=r.entity_type, key=r.position
            )
    return found


def draft_facts(connection: Connection, edges: Iterable[GraphEdge]) -> dict[UUID, DraftFact]:
    """The open state of each edge's fact (relation, sentence, confidence), for summaries."""
    keys = {e.fact_id: e.key for e in edges}
    wanted = list(keys)
    found: dict[UUID, DraftFact] = {}
    for i in range(0, len(wanted), _CHUNK):
        rows = connection.execute(
            select(
                facts.c.fact_id,
                facts.c.subject_id,
                facts.c.object_id,
                facts.c.relation,
                facts.c.fact,
                facts.c.confidence,
            ).where(facts.c.fact_id.in_(wanted[i : i + _CHUNK]), facts.c.expired_at.is_(None))
        )
        for r in rows:
            found[r.fact_id] = DraftFact(
                subject_id=r.subject_id,
                object_id=r.object_id,
                relation=r.relation,
                fact=r.fact,
                confidence=r.confidence,
                key=keys[r.fact_id],
            )
    return found


# Questions -----------------------------------------------------------------------------------


_LIVE_COMMUNITY: Final = Prepared(
    lambda: select(
        as_stored(community_members.c.entity_id), as_stored(community_members.c.community_id)
    ).where(
        as_stored(community_members.c.entity_id).in_(bindparam("ids", expanding=True)),
        community_members.c.left_at.is_(None),
    )
)


def communities_of(connection: Connection, ids: Sequence[UUID]) -> dict[UUID, UUID]:
    """The live community of each entity that has one (entities without one are left out).

    On the prepared path: recall asks it for its seeds every time."""
    wanted = {e.hex: e for e in ids}
    listed = list(wanted)
    found: dict[UUID, UUID] = {}
    for i in range(0, len(listed), _CHUNK):
        rows = _LIVE_COMMUNITY.rows(connection, {"ids": listed[i : i + _CHUNK]})
        found.update((wanted[entity], UUID(hex=community)) for entity, community in rows)
    return found


def community_count(connection: Connection) -> int:
    """How many communities are live."""
    statement = select(func.count()).select_from(communities)
    return int(
        connection.execute(statement.where(communities.c.dissolved_at.is_(None))).scalar_one()
    )


def list_communities(
    connection: Connection, *, limit: int = 50, top: int = 5
) -> list[CommunityRow]:
    """Live communities, largest first, each with its `top` members by degree."""
    size = func.count(community_members.c.entity_id).label("size")
    statement = (
        select(communities, size)
        .join(community_members, community_members.c.community_id == communities.c.community_id)
        .where(communities.c.dissolved_at.is_(None), community_members.c.left_at.is_(None))
        .group_by(communities.c.community_id)
        .order_by(size.desc(), communities.c.formed_position, communities.c.community_id)
        .limit(min(limit, _LARGEST))
    )
    rows = connection.execute(statement).all()
    members = _members(connection, [r.community_id for r in rows])
    return [
        CommunityRow(
            community_id=r.community_id,
            name=r.name,
            summary=r.summary,
            summarizer=r.summarizer,
            fingerprint=r.fingerprint,
            size=r.size,
            stale=r.stale,
            formed_at=r.formed_at,
            top_members=members.get(r.community_id, [])[:top],
        )
        for r in rows
    ]


def _members(connection: Connection, ids: list[UUID]) -> dict[UUID, list[CommunityMember]]:
    """Open members of these communities, best connected first (then first seen)."""
    found: dict[UUID, list[tuple[int, int, CommunityMember]]] = {}
    for i in range(0, len(ids), _CHUNK):
        rows = connection.execute(
            select(
                community_members.c.community_id,
                community_members.c.assigned,
                entities.c.entity_id,
                entities.c.name,
                entities.c.entity_type,
                entities.c.position,
            )
            .join(entities, entities.c.entity_id == community_members.c.entity_id)
            .where(
                community_members.c.community_id.in_(ids[i : i + _CHUNK]),
                community_members.c.left_at.is_(None),
            )
        ).all()
        degrees = _degrees(connection, [r.entity_id for r in rows])
        for r in rows:
            member = CommunityMember(
                entity_id=r.entity_id,
                name=r.name,
                entity_type=r.entity_type,
                degree=degrees.get(r.entity_id, 0),
                assigned=r.assigned,
            )
            found.setdefault(r.community_id, []).append((-member.degree, r.position, member))
    return {c: [m for *_, m in sorted(ms, key=lambda t: t[:2])] for c, ms in found.items()}


def _degrees(connection: Connection, ids: list[UUID]) -> dict[UUID, int]:
    """Active edges touching each entity."""
    degrees: dict[UUID, int] = {}
    for i in range(0, len(ids), _CHUNK):
        part = ids[i : i + _CHUNK]
        rows = connection.execute(
            select(facts.c.subject_id, facts.c.object_id).where(
                or_(facts.c.subject_id.in_(part), facts.c.object_id.in_(part)),
                facts.c.expired_at.is_(None),
                facts.c.standing == "believed",
                facts.c.valid_until.is_(None),
                facts.c.object_id.is_not(None),
            )
        )
        wanted = set(part)
        for r in rows:
            for end in (r.subject_id, r.object_id):
                if end in wanted:
                    degrees[end] = degrees.get(end, 0) + 1
    return degrees
