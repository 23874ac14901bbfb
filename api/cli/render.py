"""Output for people (rich tables) and for programs (`--json`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime, time
from typing import Any, Final, TextIO

import msgspec
from rich.console import Console
from rich.table import Table

from apexmem.cli.ids import short_fact
from apexmem.events.entity import AliasClaimed, EntityObserved
from apexmem.events.envelope import RecordedEvent
from apexmem.events.episode import MessageRecorded
from apexmem.events.erasure import Erased, RecordsErased
from apexmem.events.fact import FactAsserted, FactReinforced, FactRetracted, FactSuperseded
from apexmem.events.fading import FactsFaded
from apexmem.events.link import FactLinked
from apexmem.readmodels.rows import EntityRow, FactRow, Reached
from apexmem.replay.audit import HistoryEntry
from apexmem.replay.diff import Diff
from apexmem.replay.snapshot import FactView
from apexmem.service.recalled import Recall, when
from apexmem.service.results import MemoryStats

__all__ = [
    "console",
    "describe",
    "diff_table",
    "emit_json",
    "entities_table",
    "errors",
    "fact_rows_table",
    "facts_table",
    "history_table",
    "linked",
    "log_table",
    "moment",
    "reached_table",
    "recall_table",
    "short",
    "stats_table",
    "summarize",
]

PIPED_WIDTH: Final = 100_000
"""The width tables are laid out in when the output is not a terminal: wide enough that no
cell is folded, so a pipe or a file gets whole words, one row a line."""


def _width(stream: TextIO) -> int | None:
    """None on a terminal (rich asks it for its width); else `PIPED_WIDTH`, $COLUMNS too
    set or not: rich would fold every table at 80 columns (or $COLUMNS), mid-word."""
    return None if _is_terminal(stream) else PIPED_WIDTH


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


# Names, messages and queries are the user's text: no rich markup, no :emoji: codes, so a
# `[/]` or `[bold]` in them prints as stored instead of styling the output or failing.
console = Console(highlight=False, markup=False, emoji=False, width=_width(sys.stdout))
errors = Console(stderr=True, highlight=False, markup=False, emoji=False, width=_width(sys.stderr))


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
            f"{short_fact(data.fact_id)} {data.fact!r} valid {_day(data.valid_from)} -> {until}, "
            f"confidence {data.confidence:.2f}, {data.outcome}"
        )
    if isinstance(data, FactReinforced):
        since = f" as holding from {_day(data.valid_from)}" if data.valid_from else ""
        told = f" as {data.fact!r}" if data.fact is not None else ""
        return (
            f"{short_fact(data.fact_id)} observed again{told}{since}, "
            f"confidence {data.confidence:.2f}"
        )
    if isinstance(data, FactSuperseded):
        return (
            f"{short_fact(data.fact_id)} closed at {_day(data.valid_until)} "
            f"by {short_fact(data.superseded_by)}"
        )
    if isinstance(data, FactRetracted):
        end = f"ended at {_day(data.valid_until)}" if data.valid_until else "withdrawn"
        return f"{short_fact(data.fact_id)} {end}: {data.reason}"
    if isinstance(data, EntityObserved):
        return f"{data.name} ({data.entity_type})" + (f": {data.summary}" if data.summary else "")
    if isinstance(data, AliasClaimed):
        return f"{data.name!r} claimed by {short(data.entity_id)} ({data.entity_type})"
    if isinstance(data, MessageRecorded):
        return f"{data.speaker}: {data.text[:60]}"
    if isinstance(data, Erased):
        return "(erased)"
    if isinstance(data, FactsFaded):
        return _fades(data)
    if isinstance(data, FactLinked):
        return linked(data.source, data.target, data.link_type, data.strength, data.origin)
    if isinstance(data, RecordsErased):
        where = ", ".join(map(str, data.positions[:8])) + (
            ", ..." if len(data.positions) > 8 else ""
        )
        return f"erased {data.scope} {short(data.target)} at {where}: {data.reason}"
    return describe(data)


def _fades(data: FactsFaded) -> str:
    """A decay pass: which versions went under the threshold or came back, and why."""
    said = [
        f"{short_fact(f.fact_id)} {word} ({f.reason}, {f.rate:g}/day, confidence "
        f"{f.confidence:.3g}, last observed {_day(f.observed_at)})"
        for word, fades in (("faded", data.faded), ("restored", data.restored))
        for f in fades
    ]
    shown = "; ".join(said[:4]) + (f"; and {len(said) - 4} more" if len(said) > 4 else "")
    return f"at {_day(data.at)} under {data.threshold:g}: {shown}"


def linked(source: object, target: object, link_type: str, strength: float, origin: str) -> str:
    """A link between facts: `linked 07506636:1 caused_by 0df322a3:1 (0.80)`."""
    by = "" if origin == "told" else f", {origin}"
    return f"linked {short_fact(source)} {link_type} {short_fact(target)} ({strength:.2f}{by})"


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


def fact_rows_table(rows: Sequence[FactRow], title: str) -> Table:
    """Fact versions from the read models: both time axes, and when the store learned each."""
    table = Table(title=title, title_justify="left")
    columns = ("subject", "relation", "object", "edge", "conf", "valid_from", "valid_until")
    for column in columns:
        table.add_column(column, overflow="fold")
    table.add_column("recorded_at", overflow="fold")
    table.add_column("fact", no_wrap=True)  # a short id every command takes back
    for r in rows:
        table.add_row(
            r.subject,
            r.relation,
            r.object or "",
            r.edge_type,
            f"{r.confidence:.2f}",
            _day(r.valid_from),
            _day(r.valid_until) if r.valid_until else "",
            moment(r.recorded_at),
            short_fact(r.fact_id),
        )
    return table


def entities_table(rows: Sequence[EntityRow], title: str) -> Table:
    """Entities with their type, the names that resolve to them and when they were first seen."""
    table = Table(title=title, title_justify="left")
    for column in ("name", "type", "aliases", "first_seen", "id"):
        table.add_column(column, overflow="fold")
    for r in rows:
        others = [a for a in r.aliases if a != r.name]
        table.add_row(
            r.name, r.entity_type, ", ".join(others), moment(r.first_seen), short(r.entity_id)
        )
    return table


def reached_table(rows: Sequence[Reached], title: str) -> Table:
    """Entities a traversal reached, nearest first."""
    table = Table(title=title, title_justify="left")
    for column in ("hops", "name", "type", "id"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(str(r.hops), r.name, r.entity_type, short(r.entity_id))
    return table


def recall_table(found: Recall, title: str) -> Table:
    """Recalled hits, best first: score, kind, text, when (a fact held, a message was said),
    why, and where each came from."""
    notes = []
    if found.seeds:
        notes.append(f"seeds: {', '.join(found.seeds)}")
    if found.cut_short:
        notes.append("cut short by the time budget")
    caption = "; ".join(notes) or None
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    for column in ("#", "score", "kind", "text", "when", "why", "ref", "episode"):
        table.add_column(column, overflow="fold")
    for rank, h in enumerate(found, 1):
        table.add_row(
            str(rank),
            f"{h.score:.4f}",
            h.kind,
            h.text if h.message is None else f"{h.message.speaker}: {h.text}",
            when(h),
            "; ".join(h.why),
            h.provenance.ref or "",
            h.provenance.episode or "",
        )
    return table


def diff_table(changes: Diff) -> Table:
    """Every change of belief in a diff, in log order."""
    since, until = moment(changes.since), moment(changes.until)
    table = Table(
        title=f"changes after {since} up to {until} (positions {changes.first}..{changes.last})",
        title_justify="left",
    )
    for column in ("pos", "recorded_at", "change", "fact", "valid", "detail"):
        table.add_column(column, overflow="fold")
    every = sorted(
        (
            *changes.asserted,
            *changes.superseded,
            *changes.retracted,
            *changes.faded,
            *changes.restored,
        ),
        key=lambda c: c.position,
    )
    rows: list[tuple[int, str, str, str, str, str]] = []
    for c in every:
        target = "" if c.object is None else f" {c.object}"
        detail = f"by {short_fact(c.detail[3:])}" if c.kind == "superseded" else c.detail
        until_ = _day(c.valid_until) if c.valid_until else "open"
        rows.append(
            (
                c.position,
                moment(c.recorded_at),
                c.kind,
                f"{c.subject} {c.relation}{target}",
                f"{_day(c.valid_from)} -> {until_}",
                detail,
            )
        )
    for link in changes.linked:
        said = f"{link.source_fact or '(not known)'!r} -> {link.target_fact or '(not known)'!r}"
        rows.append(
            (
                link.position,
                moment(link.recorded_at),
                "linked",
                linked(link.source, link.target, link.link_type, link.strength, link.origin),
                "",
                said,
            )
        )
    for position, *cells in sorted(rows, key=lambda row: row[0]):
        table.add_row(str(position), *cells)
    return table


def stats_table(stats: MemoryStats) -> Table:
    """Counts and sizes, one per row."""
    table = Table(title="memory", title_justify="left")
    table.add_column("measure")
    table.add_column("value", justify="right")
    graph = stats.graph
    rows = (
        ("events", stats.events),
        ("last position", stats.last_position),
        ("log bytes", stats.log_bytes),
        ("read-model bytes", stats.readmodel_bytes),
        ("projection lag", stats.projection_lag),
        ("entities", graph.entities),
        ("aliases", graph.aliases),
        ("fact versions", graph.fact_versions),
        ("fact states", graph.fact_states),
        ("current facts", graph.current_facts),
        ("episodes", graph.episodes),
        ("messages", graph.messages),
        ("communities", graph.communities),
        ("faded facts", graph.faded_facts),
        ("archived fact versions", graph.archived_facts),
        ("archived entities", graph.archived_entities),
        ("messages skipped as unsurprising", graph.gated_messages),
        ("messages waiting for extraction", graph.unextracted_messages),
    )
    for name, value in rows:
        table.add_row(name, f"{value:,}")
    return table


def moment(value: datetime) -> str:
    """A time to the second, UTC written as `Z`: short, and accepted back by every option."""
    return value.isoformat(timespec="seconds").replace("+00:00", "Z")
