"""Replayed directories: a copy of the log up to a past moment, opened as a read-only memory."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from apexmem.config import EVENTS_FILE, REPLAY_FILE, SETTINGS_FILE
from apexmem.events.errors import ValidationError
from apexmem.events.log import EventLog
from apexmem.events.ports import Log
from apexmem.location import Location
from apexmem.replay.migrate import migrate

__all__ = ["copy_until", "known_at_position", "read_only_reason", "replayed_at"]

_BEFORE_ANYTHING: Final = datetime(1, 1, 1, tzinfo=UTC)
"""The transaction time of position 0: before the first event."""
_GAP_STEP: Final = 64
"""Positions read at once looking back over a gap (PostgreSQL's sequence may skip some)."""


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


def known_at_position(log: Log, position: object) -> datetime:
    """The transaction time the log stood at after `position`: a view known at it sees
    every event up to `position` and the rest of that position's append (an append is
    recorded all at once, at one time); position 0 is before the first event.

    A position that is not an integer from 0 to the log's last is a ValidationError naming
    `position`.
    """
    last = log.last_position()
    if isinstance(position, bool) or not isinstance(position, int):
        raise ValidationError("position", position, "is not a log position (an integer)")
    if not 0 <= position <= last:
        raise ValidationError("position", position, f"is not a position of this log (0..{last})")
    stop = position
    while stop > 0:  # the nearest position at or before it (a PostgreSQL log may have gaps)
        found = list(log.read(start=max(1, stop - _GAP_STEP + 1), stop=stop))
        if found:
            return found[-1].recorded_at
        stop -= _GAP_STEP
    return _BEFORE_ANYTHING


def _recorded_at(log: Log, position: int) -> datetime | None:
    """The transaction time of the event at `position` (None before the first)."""
    found = next(iter(log.read(start=position, stop=position)), None) if position > 0 else None
    return None if found is None else found.recorded_at
