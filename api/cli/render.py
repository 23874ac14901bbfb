"""Output for people (rich tables) and for programs (`--json`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime, time
from typing import Any

import msgspec
from rich.console import Console
from rich.table import Table

from apexmem.events.entity import AliasClaimed, EntityObserved
from apexmem.events.episode import MessageRecorded
from apexmem.events.fact import FactAsserted, FactReinforced, FactRetracted, FactSuperseded
from apexmem.events.log import RecordedEvent
from apexmem.replay.audit import HistoryEntry
from apexmem.replay.snapshot import FactView

__all__ = [
    "console",
    "describe",
    "emit_json",
    "facts_table",
    "history_table",
    "log_table",
    "short",
    "summarize",
]

console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)


def emit_json(value: Any) -> None:
    """Write one JSON document to stdout."""
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")


def short(value: object, width: int = 8) -> str:
    """A short form of an id for tables (the full id is in `--json`)."""
    text = str(value)
    return text[:width]


def describe(data: Any) -> str:
    """A one-line summary of an event payload."""
    fields = msgspec.structs.asdict(data)
    fields.pop("type", None)
    parts = [f"{k}={_value(v)}" for k, v in fields.items() if v not in (None, [], "")]
    return " ".join(parts)


def _value(value: object) -> str:
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def summarize(data: Any) -> str:  # noqa: PLR0911 - one branch per event kind reads best
    """What an event says, in a few words (`describe` lists every field instead)."""
    if isinstance(data, FactAsserted):
        until = _day(data.valid_until) if data.valid_until else "open"
        return (
            f"{short(data.fact_id)} {data.fact!r} valid {_day(data.valid_from)} -> {until}, "
            f"confidence {data.confidence:.2f}, {data.outcome}"
        )
    if isinstance(data, FactReinforced):
        return f"{short(data.fact_id)} observed again, confidence {data.confidence:.2f}"
    if isinstance(data, FactSuperseded):
        return (
            f"{short(data.fact_id)} closed at {_day(data.valid_until)} "
            f"by {short(data.superseded_by)}"
        )
    if isinstance(data, FactRetracted):
        end = f"ended at {_day(data.valid_until)}" if data.valid_until else "withdrawn"
        return f"{short(data.fact_id)} {end}: {data.reason}"
    if isinstance(data, EntityObserved):
        return f"{data.name} ({data.entity_type})" + (f": {data.summary}" if data.summary else "")
    if isinstance(data, AliasClaimed):
        return f"{data.name!r} claimed by {short(data.entity_id)} ({data.entity_type})"
    if isinstance(data, MessageRecorded):
        return f"{data.speaker}: {data.text[:60]}"
    return describe(data)


def _day(value: datetime) -> str:
    return value.date().isoformat() if value.time() == time(0) else value.isoformat()


def history_table(entries: Sequence[HistoryEntry], title: str) -> Table:
    """Events with position, recorded_at, tag, provenance, chain hash and what they say."""
    columns = ("actor", "episode", "chain")
    rows = [(e.actor or "", e.episode or "", short(e.chain, 10)) for e in entries]
    return _events_table(title, entries, columns, rows)


def log_table(events: Sequence[RecordedEvent], title: str) -> Table:
    """Events in position order with their stream, version, actor and what they say."""
    columns = ("stream", "v", "actor")
    rows = [(short(e.stream_id), str(e.version), e.actor or "") for e in events]
    return _events_table(title, events, columns, rows)


def _events_table(
    title: str,
    events: Sequence[HistoryEntry | RecordedEvent],
    columns: tuple[str, ...],
    rows: Sequence[tuple[str, ...]],
) -> Table:
    """pos, recorded_at and event, then the given columns, then what the event says."""
    table = Table(title=title, title_justify="left")
    for column in ("pos", "recorded_at", "event", *columns, "what"):
        table.add_column(column, overflow="fold")
    for e, row in zip(events, rows, strict=True):
        time_ = e.recorded_at.isoformat(timespec="seconds")
        table.add_row(str(e.position), time_, e.tag, *row, summarize(e.data))
    return table


def facts_table(facts: list[FactView], title: str) -> Table:
    """Fact versions with both time axes."""
    table = Table(title=title, title_justify="left")
    for column in ("subject", "relation", "object", "edge", "conf", "valid_from", "valid_until"):
        table.add_column(column, overflow="fold")
    for f in sorted(facts, key=lambda f: (f.subject, f.relation, f.valid_from)):
        table.add_row(
            f.subject,
            f.relation,
            f.object or "",
            f.edge_type,
            f"{f.confidence:.2f}",
            f.valid_from.date().isoformat(),
            f.valid_until.date().isoformat() if f.valid_until else "",
        )
    return table
