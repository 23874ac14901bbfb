"""Where a memory lives and which settings it uses: the edge between files and domain Settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from apexmem.domain.settings import Settings, parse_settings
from apexmem.service.logs import get_logger

__all__ = [
    "DEFAULT_HOME",
    "EVENTS_FILE",
    "READMODELS_FILE",
    "REPLAY_FILE",
    "SETTINGS_FILE",
    "holds_memory",
    "home",
    "load_settings",
]

SETTINGS_FILE: Final = "apexmem.toml"
EVENTS_FILE: Final = "events.db"
READMODELS_FILE: Final = "readmodels.db"
REPLAY_FILE: Final = "replay.json"
"""Marks a directory made by `replay`: a read-only memory of the log up to a past moment."""
DEFAULT_HOME: Final = Path("~/.apexmem")
"""Used when neither `--db` nor `APEXMEM_HOME` names a memory directory."""

_logger = get_logger()


def home(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The memory directory: the explicit path, else `$APEXMEM_HOME`, else `~/.apexmem`."""
    chosen = explicit or os.environ.get("APEXMEM_HOME") or DEFAULT_HOME
    return Path(chosen).expanduser()


def holds_memory(directory: Path) -> bool:
    """Whether a memory is in `directory`: its log, `events.db`, is there.

    The one rule for "is there a memory here?": a directory that is absent, empty or holds
    only a settings file holds none yet. Commands that only read refuse such a directory
    instead of creating a memory in it.
    """
    return (directory / EVENTS_FILE).is_file()


def load_settings(directory: Path) -> Settings:
    """Settings from `<directory>/apexmem.toml` when it exists, else the defaults."""
    path = directory / SETTINGS_FILE
    if not path.exists():
        return Settings()
    settings, warnings = parse_settings(path.read_text(encoding="utf-8"), source=str(path))
    for warning in warnings:
        _logger.warning("settings.adjusted", file=str(path), warning=warning)
    return settings
