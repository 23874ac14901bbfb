"""Option callbacks: times with a zone, a log position or a time, comma-separated lists.

A time the library refuses raises its ValidationError, which `main` reports as
`error: ...` with exit status 2; the message names the option and an accepted form.
"""

from __future__ import annotations

from datetime import datetime

import click

__all__ = ["to_list", "to_position_or_time", "to_time"]


def to_time(_ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    """ISO 8601 with a zone (`Z` too), or `YYYY-MM-DD HH:MM:SS` read as UTC; None stays None."""
    if value is None:
        return None
    from apexmem.domain.times import parse_time

    return parse_time(_field(param), value)


def to_position_or_time(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> int | datetime | None:
    """A plain integer is a log position; anything else a time."""
    if value is not None and value.strip().isdigit():
        return int(value)
    return to_time(ctx, param, value)


def to_list(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[str, ...]:
    """`a,b,c` as a tuple of the non-empty parts."""
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


def _field(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        return param.opts[0]
    return param.human_readable_name
