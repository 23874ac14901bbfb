"""Where a memory lives and which settings it uses: the edge between files and domain Settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from apexmem.domain.settings import Settings, parse_settings
from apexmem.location import DEFAULT_SCHEMA, Location, locate
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


def home(explicit: str | os.PathLike[str] | Location | None = None) -> Location:
    """Where the memory is: the explicit place, else `$APEXMEM_HOME`, else `~/.apexmem`.

    A place is a directory or a PostgreSQL URL (see `apexmem.location`).
    """
    if isinstance(explicit, Location):
        return explicit
    chosen = explicit or os.environ.get("APEXMEM_HOME") or DEFAULT_HOME
    return locate(chosen)


def holds_memory(place: Location | Path) -> bool:
    """Whether a memory is at `place`: its log is there (`events.db`, or the log tables in
    the PostgreSQL schema).

    The one rule for "is there a memory here?": a directory that is absent, empty or holds
    only a settings file holds none yet, nor does a database without the schema. Commands
    that only read refuse such a place instead of creating a memory in it.
    """
    location = place if isinstance(place, Location) else Location(directory=place)
    if location.url is not None:
        return _holds_log(location.url, location.schema or DEFAULT_SCHEMA)
    return (location.directory / EVENTS_FILE).is_file()


def _holds_log(url: str, schema: str) -> bool:
    """Whether the schema at `url` has a log (its layout row); reads only."""
    from apexmem.events.postgres import LAYOUT_TABLE, Server, quoted_schema

    table = f"{quoted_schema(schema)}.{LAYOUT_TABLE}"
    with Server(url).connect(autocommit=True) as connection:
        found = connection.execute("SELECT to_regclass(%s)", (table,)).fetchone()
        if found is None or found[0] is None:
            return False
        row = connection.execute(f"SELECT 1 FROM {table} WHERE part = 'log'").fetchone()
        return row is not None


def load_settings(directory: Path) -> Settings:
    """Settings from `<directory>/apexmem.toml` when it exists, else the defaults."""
    path = directory / SETTINGS_FILE
    if not path.exists():
        return Settings()
    settings, warnings = parse_settings(path.read_text(encoding="utf-8"), source=str(path))
    for warning in warnings:
        _logger.warning("settings.adjusted", file=str(path), warning=warning)
    return settings
