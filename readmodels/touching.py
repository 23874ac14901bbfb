"""The slots an entity's facts live in, as subject or object, with what each slot is of."""

from __future__ import annotations

from uuid import UUID

import msgspec
from sqlalchemy import Connection, or_, select

from apexmem.readmodels.tables import facts

__all__ = ["SlotKey", "slots_touching"]


class SlotKey(msgspec.Struct, frozen=True):
    """What a slot is the slot of: its subject, relation and edge type (each version in it
    names its own object or value)."""

    slot_id: UUID
    subject_id: UUID
    relation: str
    edge_type: str


def slots_touching(connection: Connection, entity: UUID) -> list[SlotKey]:
    """Every slot holding a fact with `entity` as its subject or its object."""
    statement = (
        select(
            facts.c.slot_id,
            facts.c.subject_id,
            facts.c.relation,
            facts.c.edge_type,
        )
        .where(or_(facts.c.subject_id == entity, facts.c.object_id == entity))
        .order_by(facts.c.position)
    )
    found: dict[UUID, SlotKey] = {}
    for row in connection.execute(statement):
        found.setdefault(row.slot_id, SlotKey(*row))
    return list(found.values())
