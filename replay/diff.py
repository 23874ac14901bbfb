"""What changed in the store's beliefs between two transaction times."""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal
from uuid import UUID

import msgspec
from sqlalchemy import Connection, select

from apexmem.events.envelope import RecordedEvent
from apexmem.events.fact import FactAsserted, FactRetracted, FactSuperseded
from apexmem.events.ports import Log
from apexmem.readmodels.entities import names_of
from apexmem.readmodels.tables import facts

__all__ = ["Diff", "FactChange", "diff"]

_TAGS: Final = ("fact-asserted.v1", "fact-superseded.v1", "fact-retracted.v1")


class FactChange(msgspec.Struct, frozen=True, kw_only=True):
    """One change of belief: a version asserted, closed by a newer one, or retracted."""

    kind: Literal["asserted", "superseded", "retracted"]
    position: int
    recorded_at: datetime
    actor: str | None
    episode: str | None
    fact_id: UUID
    subject: str
    relation: str
    object: str | None
    fact: str
    valid_from: datetime
    valid_until: datetime | None
    """For a supersession or a retraction: the end it gave the version (None: withdrawn)."""
    detail: str
    """The assertion's outcome, the superseding version's id, or the retraction's reason."""


class Diff(msgspec.Struct, frozen=True, kw_only=True):
    """Changes recorded after `since` and up to `until` (positions `first`..`last`)."""

    since: datetime
    until: datetime
    first: int
    last: int
    asserted: list[FactChange]
    superseded: list[FactChange]
    retracted: list[FactChange]


def diff(log: Log, connection: Connection, since: datetime, until: datetime) -> Diff:
    """Facts asserted, superseded and retracted in (since, until], in log order."""
    first = log.position_at(since) + 1
    last = log.position_at(until)
    events = list(log.read(start=first, stop=last, tags=_TAGS)) if last >= first else []
    versions = _versions(connection, [e.data.fact_id for e in events])
    names = names_of(
        connection,
        {
            entity
            for v in versions.values()
            for k in ("subject_id", "object_id")
            if isinstance(entity := v[k], UUID)
        },
    )
    changes = [_change(e, versions, names) for e in events if e.data.fact_id in versions]
    return Diff(
        since=since,
        until=until,
        first=first,
        last=max(last, first - 1),
        asserted=[c for c in changes if c.kind == "asserted"],
        superseded=[c for c in changes if c.kind == "superseded"],
        retracted=[c for c in changes if c.kind == "retracted"],
    )


def _versions(connection: Connection, ids: list[UUID]) -> dict[UUID, dict[str, object]]:
    """The first known state of each version: what was asserted."""
    found: dict[UUID, dict[str, object]] = {}
    wanted = list(set(ids))
    for i in range(0, len(wanted), 400):
        statement = (
            select(facts)
            .where(facts.c.fact_id.in_(wanted[i : i + 400]))
            .order_by(facts.c.fact_id, facts.c.position)
        )
        for row in connection.execute(statement):
            found.setdefault(row.fact_id, dict(row._mapping))
    return found


def _change(
    event: RecordedEvent,
    versions: dict[UUID, dict[str, object]],
    names: dict[UUID, tuple[str, str]],
) -> FactChange:
    data = event.data
    version = versions[data.fact_id]
    subject_id = version["subject_id"]
    object_id = version["object_id"]
    assert isinstance(subject_id, UUID)
    target = names[object_id][0] if isinstance(object_id, UUID) and object_id in names else None
    detail: str
    if isinstance(data, FactAsserted):
        kind, until, detail = "asserted", data.valid_until, data.outcome
    elif isinstance(data, FactSuperseded):
        kind, until, detail = "superseded", data.valid_until, f"by {data.superseded_by}"
    else:
        assert isinstance(data, FactRetracted)
        kind, until, detail = "retracted", data.valid_until, data.reason
    return msgspec.convert(
        {
            "kind": kind,
            "position": event.position,
            "recorded_at": event.recorded_at,
            "actor": event.actor,
            "episode": event.episode,
            "fact_id": data.fact_id,
            "subject": names.get(subject_id, (str(subject_id), ""))[0],
            "relation": version["relation"],
            "object": target if target is not None else version["value"],
            "fact": version["fact"],
            "valid_from": version["valid_from"],
            "valid_until": until,
            "detail": detail,
        },
        FactChange,
        from_attributes=True,
    )
