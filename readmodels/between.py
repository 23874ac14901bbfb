"""Facts believed between one subject and one object: belief revision's candidates."""

from __future__ import annotations

from datetime import datetime
from typing import Final
from uuid import UUID

import msgspec
from sqlalchemy import Connection, bindparam, or_, select

from apexmem.readmodels.tables import facts

__all__ = ["Between", "believed_between"]


class Between(msgspec.Struct, frozen=True, kw_only=True):
    """A believed fact version joining the subject to the object, current at or after the
    moment asked."""

    fact_id: UUID
    slot_id: UUID
    relation: str
    fact: str


def believed_between(
    connection: Connection, subject: UUID, object_id: UUID, *, edge_type: str, at: datetime
) -> list[Between]:
    """Believed versions known now from `subject` to `object_id` of `edge_type` that still
    hold at `at` or later: open-ended, or ending after it (a belief true until 2030 is
    current, so a new fact starting before then can contradict it)."""
    rows = connection.execute(
        _BETWEEN,
        {"subject": subject, "object_id": object_id, "edge_type": edge_type, "at": at},
    )
    return [
        Between(fact_id=row.fact_id, slot_id=row.slot_id, relation=row.relation, fact=row.fact)
        for row in rows
    ]


# Built once: it runs for every assertion of a batch while belief revision is on.
_BETWEEN: Final = (
    select(facts.c.fact_id, facts.c.slot_id, facts.c.relation, facts.c.fact)
    .where(
        facts.c.subject_id == bindparam("subject"),
        facts.c.expired_at.is_(None),
        facts.c.object_id == bindparam("object_id"),
        facts.c.edge_type == bindparam("edge_type"),
        facts.c.standing == "believed",
        or_(
            facts.c.valid_until.is_(None),
            facts.c.valid_until > bindparam("at", type_=facts.c.valid_until.type),
        ),
    )
    .order_by(facts.c.position)
)
