"""Replayed directories: a copy of the log up to a past moment, opened as a read-only memory."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

from apexmem.config import EVENTS_FILE, REPLAY_FILE, SETTINGS_FILE
from apexmem.events.errors import ValidationError
from apexmem.events.log import EventLog
from apexmem.events.ports import Log
from apexmem.location import Location
from apexmem.replay.migrate import migrate

__all__ = ["copy_until", "read_only_reason", "replayed_at"]


def copy_until(
    log: Log, source: Location, target: Path, *, position: int, until: datetime | str | int
) -> Path:
    """Make `target` a memory directory holding `log` up to `position`; never overwrites.

    A SQLite log is copied file to file; a log of another backend (PostgreSQL) is carried
    over record by record, as `apexmem migrate` does, and verified on arrival.
    """
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ValidationError(
            "into", str(target), "is not an empty directory; replay never overwrites"
        )
    target.mkdir(parents=True, exist_ok=True)
    if isinstance(log, EventLog):
        copied = log.copy_to(target / EVENTS_FILE, until=position)
    else:
        local = EventLog(target / EVENTS_FILE)
        try:
            copied = migrate(log, local, until=position).events
        finally:
            local.close()
    if (source.directory / SETTINGS_FILE).exists():
        shutil.copyfile(source.directory / SETTINGS_FILE, target / SETTINGS_FILE)
    at = until if isinstance(until, datetime) else _recorded_at(log, position)
    marker = {
        "source": str(source) if source.on_postgres else str(source.directory.resolve()),
        "until": until.isoformat() if isinstance(until, datetime) else until,
        "position": position,
        "events": copied,
        "at": None if at is None else at.isoformat(),
    }
    (target / REPLAY_FILE).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    return target


def read_only_reason(directory: Path) -> str | None:
    """Why a memory directory refuses writes (it is a replay), or None."""
    marker = directory / REPLAY_FILE
    if not marker.exists():
        return None
    info = json.loads(marker.read_text(encoding="utf-8"))
    return (
        f"a replay of {info.get('source')} up to position {info.get('position')} "
        f"({info.get('until')})"
    )


def replayed_at(directory: Path) -> datetime | None:
    """The moment a replayed directory shows (its clock: decay is measured there), or None
    for a memory that is not a replay."""
    marker = directory / REPLAY_FILE
    if not marker.exists():
        return None
    info = json.loads(marker.read_text(encoding="utf-8"))
    for key in ("at", "until"):
        if isinstance(info.get(key), str):
            return datetime.fromisoformat(info[key])
    return None


def _recorded_at(log: Log, position: int) -> datetime | None:
    """The transaction time of the event at `position` (None before the first)."""
    found = next(iter(log.read(start=position, stop=position)), None) if position > 0 else None
    return None if found is None else found.recorded_at
