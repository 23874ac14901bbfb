"""A broken chain stops writes: the marker `verify` leaves, the check on open, the recovery.

`verify` that finds a bad position writes `damaged.json` in the memory directory; while it
is there, or while the end of the chain (`replay.verify.verify_tail`) does not verify on
open, the memory refuses writes, naming the first bad position. `recover` copies the log
up to the last good position into a new directory, which opens as a writable memory; the
damaged file stays as it is. A `verify` that passes again (a good copy restored) removes
the marker.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import msgspec

from apexmem.config import EVENTS_FILE, SETTINGS_FILE
from apexmem.events.errors import ApexmemError, ValidationError
from apexmem.events.log import EventLog
from apexmem.events.ports import Log
from apexmem.replay.verify import VerifyReport, verify, verify_tail
from apexmem.service.logs import get_logger

__all__ = ["DAMAGE_FILE", "RECOVERED_FILE", "Recovery", "found", "noted", "recover"]

DAMAGE_FILE: Final = "damaged.json"
"""Left in a memory directory by a `verify` that found a bad position."""
RECOVERED_FILE: Final = "recovered.json"
"""Written in a recovered directory: where its log came from and where it was cut."""

_logger = get_logger()


class Recovery(msgspec.Struct, frozen=True, kw_only=True):
    """What `recover` did: the positions kept, where the damage was, where the copy is."""

    directory: str
    source: str
    kept_until: int
    first_bad_position: int
    reason: str
    events: int
    head: str | None


def refusal(position: int | None, reason: str, directory: Path) -> str:
    """Why writes are refused, with the way out."""
    where = "an unknown position" if position is None else f"position {position}"
    return (
        f"its log's chain breaks at {where} ({reason}); writes are refused until "
        f"it is recovered: apexmem --db {directory} recover --to NEWDIR (README: Recovering "
        "a damaged log)"
    )


def found(directory: Path, log: Log) -> str | None:
    """Why this memory must refuse writes (a marker left by verify, or a chain whose end
    does not verify), told as a warning; None when neither. Cheap: the tail only."""
    marker = directory / DAMAGE_FILE
    position: int | None
    if marker.exists():
        info = json.loads(marker.read_text(encoding="utf-8"))
        position, reason = int(info["position"]), str(info["reason"])
    else:
        tail = verify_tail(log)
        if tail.ok:
            return None
        position, reason = tail.first_bad_position, str(tail.reason)
    _logger.warning("log.damaged", directory=str(directory), position=position, reason=reason)
    return refusal(position, reason, directory)


def noted(directory: Path, report: VerifyReport) -> str | None:
    """Leave (or, after a clean verify, remove) the marker; why writes are refused now."""
    marker = directory / DAMAGE_FILE
    if report.first_bad_position is None:
        if report.ok:
            marker.unlink(missing_ok=True)
        return None
    info = {
        "position": report.first_bad_position,
        "reason": report.reason,
        "events_verified": report.events_checked,
        "found_at": datetime.now(UTC).isoformat(),
    }
    marker.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return refusal(report.first_bad_position, str(report.reason), directory)


def recover(log: Log, source: Path, target: Path) -> Recovery:
    """Copy the log up to its last good position into `target` (new or empty), with the
    settings file; the damaged log is left as it is. Refused when the chain verifies."""
    report = verify(log)
    if report.first_bad_position is None:
        raise ApexmemError(f"the log in {source} verifies; there is nothing to recover")
    if not isinstance(log, EventLog):  # copying is the SQLite file's own (EventLog.copy_to)
        raise ApexmemError("recover copies SQLite logs only")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ValidationError("--to", str(target), "is not a new or empty directory")
    target.mkdir(parents=True, exist_ok=True)
    until = report.first_bad_position - 1
    events = log.copy_to(target / EVENTS_FILE, until=until)
    if (source / SETTINGS_FILE).exists():
        shutil.copyfile(source / SETTINGS_FILE, target / SETTINGS_FILE)
    copy = EventLog(target / EVENTS_FILE)
    try:
        checked = verify(copy)
    finally:
        copy.close()
    if not checked.ok:
        raise ApexmemError(
            f"the copy in {target} does not verify either ({checked.reason}, position "
            f"{checked.first_bad_position}); keep both and restore from a backup"
        )
    recovery = Recovery(
        directory=str(target),
        source=str(source / EVENTS_FILE),
        kept_until=until,
        first_bad_position=report.first_bad_position,
        reason=str(report.reason),
        events=events,
        head=checked.head,
    )
    (target / RECOVERED_FILE).write_bytes(msgspec.json.format(msgspec.json.encode(recovery)))
    return recovery
