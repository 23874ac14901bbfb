"""No setting is accepted and ignored: every key of `apexmem.toml` is read by the code
outside the settings loader (an attribute access of its name somewhere in the package)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import msgspec

from apexmem import Settings

ROOT: Final = Path(__file__).resolve().parents[2]
FOLDERS: Final = ("api", "service", "replay", "readmodels", "projections", "domain", "events")
LOADER: Final = ROOT / "domain" / "settings.py"


def keys(section: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for field in msgspec.structs.fields(section):
        if isinstance(field.type, type) and issubclass(field.type, msgspec.Struct):
            yield from keys(field.type, (*path, field.name))
        else:
            yield (*path, field.name)


def test_every_settings_key_is_read_outside_the_loader() -> None:
    code = "\n".join(
        p.read_text(encoding="utf-8")
        for folder in FOLDERS
        for p in sorted((ROOT / folder).rglob("*.py"))
        if p != LOADER
    )
    every = list(keys(Settings))

    unread = [".".join(k) for k in every if not re.search(rf"\.{k[-1]}\b", code)]

    assert len(every) > 40, f"the walk found only {len(every)} keys"
    assert not unread, f"settings accepted and read by nothing: {unread}"
