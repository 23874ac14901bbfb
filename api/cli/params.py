"""Option types and callbacks: counts, log positions, times with a zone, comma-separated lists.

A time the library refuses raises its ValidationError, which `main` reports as
`error: ...` with exit status 2; the message names the option and an accepted form.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Final

import click

__all__ = ["COUNT", "POSITION", "to_list", "to_position_or_time", "to_time"]

_LARGEST: Final = 2**63 - 1
"""The largest integer SQLite stores."""


class _AtLeast(click.IntRange):
    """An integer of at least `minimum` that SQLite can store: a larger one is a usage error
    naming the option, not an OverflowError."""

    def __init__(self, minimum: int) -> None:
        super().__init__(min=minimum)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if number > _LARGEST:
            self.fail(f"{number} is too large (at most {_LARGEST}).", param, ctx)
        return number


COUNT: Final = _AtLeast(1)
"""A `--limit`: at least one."""

POSITION: Final = _AtLeast(1)
"""A log position: the first event is at 1."""

_INTEGER: Final = re.compile(r"[+-]?\d+")


def to_time(_ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    """ISO 8601 with a zone (`Z` too), or `YYYY-MM-DD HH:MM:SS` read as UTC; None stays None."""
    if value is None:
        return None
    from apexmem.domain.times import parse_time

    return parse_time(_field(param), value)  # also refuses times outside years 1-9999 in UTC


def to_position_or_time(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> int | datetime | None:
    """A plain integer is a log position (a negative one is refused as a position); else a time."""
    if value is not None and _INTEGER.fullmatch(value.strip()):
        return int(value)
    return to_time(ctx, param, value)


def to_list(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[str, ...]:
    """`a,b,c` as a tuple of the non-empty parts."""
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


def _field(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        return param.opts[0]
    return param.human_readable_name
