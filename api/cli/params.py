"""Option types and callbacks: counts, log positions, times with a zone, comma-separated lists.

A time the library refuses raises its ValidationError, which `main` reports as
`error: ...` with exit status 2; the message names the option and an accepted form.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Final

import click

from apexmem.service.arguments import MAX_COUNT

__all__ = [
    "COUNT",
    "COUNT_OR_ZERO",
    "POSITION",
    "to_list",
    "to_position_or_time",
    "to_time",
    "to_window",
]

_LARGEST: Final = 2**63 - 1
"""The largest integer SQLite stores."""


class _Between(click.IntRange):
    """An integer from `minimum` to `maximum`: a larger one is a usage error naming the
    option, not an OverflowError deep inside."""

    def __init__(self, minimum: int, maximum: int) -> None:
        super().__init__(min=minimum)
        self.maximum = maximum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if number > self.maximum:
            self.fail(f"{number} is too large (at most {self.maximum}).", param, ctx)
        return number


COUNT: Final = _Between(1, MAX_COUNT)
"""A `--limit`: at least one, at most the library's `MAX_COUNT`."""

COUNT_OR_ZERO: Final = _Between(0, MAX_COUNT)
"""A count that may be 0 (`--hops`, members shown), at most the library's `MAX_COUNT`."""

POSITION: Final = _Between(1, _LARGEST)
"""A log position: the first event is at 1; SQLite stores the last."""

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


def to_window(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[datetime, datetime] | None:
    """`START,END`: two times as `to_time` reads them (the library checks their order)."""
    if value is None:
        return None
    parts = value.split(",")
    if len(parts) != 2:
        from apexmem.events.errors import ValidationError

        raise ValidationError(_field(param), value, "is not START,END: two times and a comma")
    start, end = (to_time(ctx, param, part) for part in parts)
    assert start is not None and end is not None
    return start, end


def to_list(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[str, ...]:
    """`a,b,c` as a tuple of the non-empty parts."""
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


def _field(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        return param.opts[0]
    return param.human_readable_name
