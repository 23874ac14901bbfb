"""What changed in the store's beliefs between two transaction times: versions asserted,
superseded and retracted, the ones decay passes recorded as faded or restored, and the
links told between facts."""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal
from uuid import UUID

import msgspec
from sqlalchemy import Connection, select

from apexmem.events.envelope import RecordedEvent
from apexmem.events.fact import FactAsserted, FactRetracted, FactSuperseded
from apexmem.events.fading import FactFade, FactsFaded
from apexmem.events.link import FactLinked
from apexmem.events.ports import Log
from apexmem.readmodels.entities import names_of
from apexmem.readmodels.tables import facts

__all__ = ["Diff", "FactChange", "LinkChange", "diff"]

_TAGS: Final = ("fact-asserted.v1", "fact-superseded.v1", "fact-retracted.v1", "facts-faded.v1")
_LINKED: Final = ("fact-linked.v1",)


class FactChange(msgspec.Struct, frozen=True, kw_only=True):
    """One change of belief: a version asserted, closed by a newer one, retracted, or
    recorded by a decay pass as faded (under the recall threshold) or restored."""

    kind: Literal["asserted", "superseded", "retracted", "faded", "restored"]
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
    """The assertion's outcome, the superseding version's id, the retraction's reason, or
    for a fade why it crossed and at what rate (`decayed at 0.01/day to 0.068`)."""


class LinkChange(msgspec.Struct, frozen=True, kw_only=True):
    """A link told between two fact versions (a new one, or one told anew with another
    strength), with the sentences of both facts."""

    position: int
    recorded_at: datetime
    actor: str | None
    source: UUID
    target: UUID
    link_type: str
    strength: float
    origin: str
    source_fact: str | None
    """The source version's sentence (None when the read models do not hold it)."""
    target_fact: str | None


class Diff(msgspec.Struct, frozen=True, kw_only=True):
    """Changes recorded after `since` and up to `until` (positions `first`..`last`)."""

    since: datetime
    until: datetime
    first: int
    last: int
    asserted: list[FactChange]
    superseded: list[FactChange]
    retracted: list[FactChange]
    faded: list[FactChange] = []
    """Versions decay passes recorded as gone under the recall threshold."""
    restored: list[FactChange] = []
    """Versions decay passes recorded as back above it."""
    linked: list[LinkChange] = []
    """Links told between facts, in log order."""


def diff(log: Log, connection: Connection, since: datetime, until: datetime) -> Diff:
    """Facts asserted, superseded and retracted, and links told, in (since, until], in log
    order."""
    first = log.position_at(since) + 1
    last = log.position_at(until)
    events = list(log.read(start=first, stop=last, tags=_TAGS)) if last >= first else []
    links = list(log.read(start=first, stop=last, tags=_LINKED)) if last >= first else []
    ends = [
        f for e in links if isinstance(e.data, FactLinked) for f in (e.data.source, e.data.target)
    ]
    versions = _versions(connection, [fact for e in events for fact, _ in _named(e)] + ends)
    names = names_of(
        connection,
        {
            entity
            for v in versions.values()
            for k in ("subject_id", "object_id")
            if isinstance(entity := v[k], UUID)
        },
    )
    changes = [
        _change(e, versions, names, fact, fade)
        for e in events
        for fact, fade in _named(e)
        if fact in versions
    ]
    return Diff(
        since=since,
        until=until,
        first=first,
        last=max(last, first - 1),
        asserted=[c for c in changes if c.kind == "asserted"],
        superseded=[c for c in changes if c.kind == "superseded"],
        retracted=[c for c in changes if c.kind == "retracted"],
        faded=[c for c in changes if c.kind == "faded"],
        restored=[c for c in changes if c.kind == "restored"],
        linked=[_link(e, e.data, versions) for e in links if isinstance(e.data, FactLinked)],
    )


def _link(
    event: RecordedEvent, data: FactLinked, versions: dict[UUID, dict[str, object]]
) -> LinkChange:
    def sentence(fact_id: UUID) -> str | None:
        said = versions.get(fact_id, {}).get("fact")
        return said if isinstance(said, str) else None

    return LinkChange(
        position=event.position,
        recorded_at=event.recorded_at,
        actor=event.actor,
        source=data.source,
        target=data.target,
        link_type=data.link_type,
        strength=data.strength,
        origin=data.origin,
        source_fact=sentence(data.source),
        target_fact=sentence(data.target),
    )


def _named(event: RecordedEvent) -> list[tuple[UUID, FactFade | None]]:
    """The fact versions an event changes: one, or every version a decay pass names."""
    data = event.data
    if isinstance(data, FactsFaded):
        return [(f.fact_id, f) for f in (*data.faded, *data.restored)]
    return [(data.fact_id, None)]


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
    fact_id: UUID,
    fade: FactFade | None,
) -> FactChange:
    data = event.data
    version = versions[fact_id]
    subject_id = version["subject_id"]
    object_id = version["object_id"]
    assert isinstance(subject_id, UUID)
    target = names[object_id][0] if isinstance(object_id, UUID) and object_id in names else None
    detail: str
    until = version["valid_until"]
    if fade is not None:
        assert isinstance(data, FactsFaded)
        kind = "faded" if fade in data.faded else "restored"
        detail = f"{fade.reason} at {fade.rate:g}/day to {fade.confidence:.3g}"
    elif isinstance(data, FactAsserted):
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
            "fact_id": fact_id,
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
