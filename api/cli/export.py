"""`apexmem export`: the log as the JSON-lines commands `apexmem ingest` reads.

Each event a command caused becomes that command again, in log order, so ingesting the
lines into an empty memory (with the same settings) decides the same events: the same
entities, names, fact versions with both time axes, retractions, merges and messages.
Events a command did not cause on its own are left out, because the command that caused
them brings them back (a supersession, a merge's moved facts, a contradiction's verdict),
or because no command makes them (usage, eviction, decay passes, communities, extraction
bookkeeping, similarity verdicts, erasures: the README lists them).

A retraction and a link name their facts by id, and a fact's id says where its assertion
stands in its slot (`events.located`); the slot of the new memory holds only what was
exported, so the id is recomputed from the position the assertion will have there. A link
naming a fact the export does not carry (an erased one) is left out.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, Final
from uuid import UUID

import click
import msgspec

from apexmem.cli.state import State, pass_state
from apexmem.events.entity import AliasClaimed, EntityMerged, EntityObserved
from apexmem.events.envelope import RecordedEvent
from apexmem.events.episode import EpisodeStarted, MessageRecorded
from apexmem.events.fact import FactAsserted, FactReinforced, FactRetracted, FactSuperseded
from apexmem.events.link import FactLinked
from apexmem.events.located import MAX_VERSION, located_id
from apexmem.events.policy import DecayRateSet, RelationMapped
from apexmem.events.similarity import FactContradicted
from apexmem.service.moves import MOVED

__all__ = ["export", "export_lines"]

_CONSEQUENCES: Final = (FactSuperseded, FactContradicted)
"""Slot events the assertion that follows them brings back by itself."""


class _Fact(msgspec.Struct, kw_only=True):
    """A fact version as the export knows it: its assertion, and its end as it stands."""

    asserted: FactAsserted
    valid_until: datetime | None
    new_id: UUID
    sentence: str
    """The sentence it reads as now: a reinforcement told in other words changes it."""


class _Exporter:
    """Folds the log into commands; one instance per export."""

    def __init__(self) -> None:
        self.names: dict[UUID, tuple[str, str]] = {}
        self.canonical: dict[UUID, str] = {}
        self.episodes: dict[UUID, str] = {}
        self.facts: dict[UUID, _Fact] = {}
        self.kept: dict[UUID, int] = {}
        self.moving: RecordedEvent | None = None  # the merge whose moves follow
        self.previous: RecordedEvent | None = None  # the last fact-slot event read
        self.continued: tuple[UUID, int, UUID] | None = None  # slot, position, fact

    def lines(self, event: RecordedEvent) -> list[dict[str, Any]]:
        data = event.data
        if self._moved(event):
            return []
        handler = _HANDLERS.get(type(data))
        if isinstance(data, _CONSEQUENCES):
            self._keep(event.stream_id)
            self._end(data)
            return []
        if handler is None:
            return []
        found: list[dict[str, Any]] = handler(self, event)
        return [{**line, **_envelope(event)} for line in found]

    def _keep(self, slot: UUID) -> int:
        """Count one event of `slot` that the new memory will hold; its version there."""
        self.kept[slot] = version = self.kept.get(slot, 0) + 1
        return version

    def _end(self, data: Any) -> None:
        if isinstance(data, FactSuperseded | FactRetracted) and data.fact_id in self.facts:
            self.facts[data.fact_id].valid_until = data.valid_until

    def _moved(self, event: RecordedEvent) -> bool:
        """Whether `event` is part of the merge just exported (its moves come back with it)."""
        merge = self.moving
        if merge is None:
            return False
        same_batch = (event.recorded_at, event.cause, event.actor) == (
            merge.recorded_at,
            merge.cause,
            merge.actor,
        )
        data = event.data
        if isinstance(data, FactRetracted):
            follows = data.reason == MOVED
        elif isinstance(data, FactAsserted | FactReinforced):
            follows = data.ref is None
        else:
            follows = isinstance(data, FactSuperseded | FactContradicted)
        if same_batch and follows:
            if isinstance(data, FactAsserted):
                self._remember(event, data)
            else:
                self._keep(event.stream_id)
            self._end(data)
            return True
        self.moving = None
        return False

    def _continues(self, event: RecordedEvent, data: FactAsserted) -> bool:
        """Whether `data` is the continuation a late version split off the version it
        superseded (`domain.timeline`): the old object again from its restart on, appended
        right after the late version by the same assertion, which brings it back."""
        previous, self.previous = self.previous, event
        if previous is None or data.supersedes is not None:
            return False
        late = previous.data
        if not (
            isinstance(late, FactAsserted)
            and late.supersedes is not None
            and (previous.stream_id, previous.position + 1) == (event.stream_id, event.position)
            and data.valid_from > late.valid_from
        ):
            return False
        old = self.facts.get(late.supersedes)
        return old is not None and (old.asserted.object_id, old.asserted.value) == (
            data.object_id,
            data.value,
        )

    def _remember(self, event: RecordedEvent, data: FactAsserted) -> None:
        version = self._keep(event.stream_id)
        new_id = located_id(event.stream_id, version) if version <= MAX_VERSION else data.fact_id
        self.facts[data.fact_id] = _Fact(
            asserted=data, valid_until=data.valid_until, new_id=new_id, sentence=data.fact
        )

    def entity(self, event: RecordedEvent) -> list[dict[str, Any]]:
        data: EntityObserved = event.data
        self.names[data.entity_id] = (data.name, data.entity_type)
        self.canonical[data.entity_id] = data.canonical_name
        line = {"op": "entity", "name": data.name, "entity_type": data.entity_type}
        return [line if data.summary is None else {**line, "summary": data.summary}]

    def alias(self, event: RecordedEvent) -> list[dict[str, Any]]:
        data: AliasClaimed = event.data
        owner = self.names.get(data.entity_id)
        if owner is None or self.canonical.get(data.entity_id) == data.alias:
            return []  # an entity's own name, claimed when it was made
        return [{"op": "alias", "entity": owner[0], "entity_type": owner[1], "alias": data.name}]

    def merge(self, event: RecordedEvent) -> list[dict[str, Any]]:
        data: EntityMerged = event.data
        source, target = self.names.get(data.entity_id), self.names.get(data.into)
        if source is None or target is None:
            return []
        self.moving = event
        line = {"op": "merge", "source": source[0], "target": target[0], "entity_type": source[1]}
        return [line if data.reason is None else {**line, "reason": data.reason}]

    def asserted(self, event: RecordedEvent) -> list[dict[str, Any]]:
        data: FactAsserted = event.data
        self._remember(event, data)
        if self._continues(event, data):
            self.continued = (event.stream_id, event.position, data.fact_id)
            return []
        line = self._fact_line(data, data.valid_from, data.valid_until)
        if line is None:
            return []
        line.update(confidence=data.confidence, observed_at=_time(data.observed_at))
        return [line if data.ref is None else {**line, "ref": data.ref}]

    def reinforced(self, event: RecordedEvent) -> list[dict[str, Any]]:
        data: FactReinforced = event.data
        self._keep(event.stream_id)
        known = self.facts.get(data.fact_id)
        if self.continued == (event.stream_id, event.position - 1, data.fact_id):
            self.continued = (event.stream_id, event.position, data.fact_id)
            return []  # a restart the continuation carries over
        if known is None:
            return []
        if data.fact is not None:
            known.sentence = data.fact
        version = known.asserted
        start = data.valid_from or version.valid_from
        line = self._fact_line(version, start, known.valid_until, sentence=known.sentence)
        if line is None:
            return []
        line.update(confidence=data.confidence, observed_at=_time(data.observed_at))
        return [line if data.ref is None else {**line, "ref": data.ref}]

    def retracted(self, event: RecordedEvent) -> list[dict[str, Any]]:
        data: FactRetracted = event.data
        self._keep(event.stream_id)
        known = self.facts.get(data.fact_id)
        self._end(data)
        fact = known.new_id if known is not None else data.fact_id
        line = {"op": "retract", "fact_id": str(fact), "reason": data.reason}
        if data.valid_until is not None:
            line["valid_until"] = _time(data.valid_until)
        return [line]

    def linked(self, event: RecordedEvent) -> list[dict[str, Any]]:
        data: FactLinked = event.data
        source, target = self.facts.get(data.source), self.facts.get(data.target)
        if source is None or target is None:
            return []  # a fact the export does not carry (erased) cannot be linked to
        line: dict[str, Any] = {
            "op": "link",
            "source": str(source.new_id),
            "target": str(target.new_id),
            "link_type": data.link_type,
            "strength": data.strength,
        }
        if data.origin != "told":
            line.update(origin=data.origin, recalls=data.recalls)
        return [line]

    def started(self, event: RecordedEvent) -> list[dict[str, Any]]:
        data: EpisodeStarted = event.data
        self.episodes[data.episode_id] = data.conversation
        return []

    def message(self, event: RecordedEvent) -> list[dict[str, Any]]:
        data: MessageRecorded = event.data
        episode = self.episodes.get(event.stream_id, event.episode)
        line = {"op": "message", "speaker": data.speaker, "text": data.text, "at": _time(data.at)}
        if data.ref is not None:
            line["ref"] = data.ref
        return [{**line, "episode": episode}]

    def mapped(self, event: RecordedEvent) -> list[dict[str, Any]]:
        data: RelationMapped = event.data
        return [
            {
                "op": "map-relation",
                "canonical": data.canonical,
                "aliases": list(data.aliases),
                "cardinality": data.cardinality,
            }
        ]

    def rate(self, event: RecordedEvent) -> list[dict[str, Any]]:
        data: DecayRateSet = event.data
        return [{"op": "decay-rate", "edge_type": data.edge_type, "rate": data.rate}]

    def _fact_line(
        self,
        data: FactAsserted,
        start: datetime,
        end: datetime | None,
        *,
        sentence: str | None = None,
    ) -> dict[str, Any] | None:
        subject = self.names.get(data.subject_id)
        if subject is None:
            return None
        line: dict[str, Any] = {
            "op": "assert",
            "subject": subject[0],
            "subject_type": subject[1],
            "relation": data.relation,
        }
        if data.object_id is not None:
            target = self.names.get(data.object_id)
            if target is None:
                return None
            line.update(object=target[0], object_type=target[1])
        elif data.value is not None:
            line["value"] = data.value
        line.update(edge_type=data.edge_type, fact=sentence or data.fact)
        line["valid_from"] = _time(start)
        if end is not None:
            line["valid_until"] = _time(end)
        return line


_HANDLERS: Final[dict[type, Any]] = {
    EntityObserved: _Exporter.entity,
    AliasClaimed: _Exporter.alias,
    EntityMerged: _Exporter.merge,
    FactAsserted: _Exporter.asserted,
    FactReinforced: _Exporter.reinforced,
    FactRetracted: _Exporter.retracted,
    FactLinked: _Exporter.linked,
    EpisodeStarted: _Exporter.started,
    MessageRecorded: _Exporter.message,
    RelationMapped: _Exporter.mapped,
    DecayRateSet: _Exporter.rate,
}


def _envelope(event: RecordedEvent) -> dict[str, str]:
    """The provenance a command carries: who wrote it, and in which episode."""
    found = {}
    if event.actor is not None:
        found["actor"] = event.actor
    if event.episode is not None and not isinstance(event.data, MessageRecorded):
        found["episode"] = event.episode
    return found


def _time(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def export_lines(events: Iterable[RecordedEvent]) -> Iterator[bytes]:
    """One JSON line (bytes, with its newline) per command, in log order."""
    exporter = _Exporter()
    encode = msgspec.json.encode
    for event in events:
        for line in exporter.lines(event):
            yield encode(line) + b"\n"


@click.command()
@click.option(
    "--format",
    "form",
    type=click.Choice(["jsonl"]),
    default="jsonl",
    show_default=True,
    help="JSON lines of ingest commands (the only format).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, writable=True),
    metavar="FILE",
    help="Write to FILE (made or replaced) instead of stdout.",
)
@pass_state
def export(state: State, form: str, out: str | None) -> None:
    """Write the log as the JSON lines `apexmem ingest` reads, so ingesting them into an
    empty memory gives one that answers the same questions (facts on both time axes,
    history of each fact, names, merges, retractions, links between facts, messages).

    Not carried: positions, recorded_at and chain hashes (the new log has its own),
    usage, eviction, communities, extraction bookkeeping, similarity matches, erased records.

    Example: apexmem --db ./old export | apexmem --db ./new ingest -
    """
    del form  # one format today; the option names it so scripts stay right when more come
    with state.open() as memory:
        lines = export_lines(memory.events())
        if out is None:
            _write(lines, sys.stdout.buffer)
            return
        with open(out, "wb") as target:
            _write(lines, target)


def _write(lines: Iterable[bytes], target: Any) -> None:
    for line in lines:
        target.write(line)
    target.flush()
