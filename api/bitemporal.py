"""A slot's bitemporal picture as SVG: one bar per version, valid time across, known time down.

The explorer shows it (`GET /v1/timeline`) and `apexmem timeline --svg` writes it to a file,
so both draw it here. A late correction (valid years ago, known only last week) is a bar
low in the picture (known late) and far to the left (valid early): visible at a glance,
where a history table hides it in its fiftieth line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Final
from xml.sax.saxutils import escape, quoteattr

from apexmem.readmodels.rows import FactRow

__all__ = ["bar_kind", "timeline_svg"]

_WIDTH: Final = 860
_LEFT: Final = 170
_RIGHT: Final = 30
_TOP: Final = 56
_ROW: Final = 30
_BAR: Final = 18
_TICKS: Final = 5
_FILL: Final = {
    "current": "#2e7d32",
    "closed": "#5c7ea6",
    "alternative": "#e08a00",
    "withdrawn": "#c62828",
    "archived": "#9e9e9e",
}
"""Bar colours by kind (see `bar_kind`); the legend lists them in this order."""
_NOT_XML: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
"""Characters XML 1.0 cannot hold, even escaped (a stored value may have them)."""


def _text(value: str) -> str:
    """Stored text as SVG character data: escaped, and what XML cannot hold shown as U+FFFD."""
    return escape(_NOT_XML.sub("\ufffd", value))


def bar_kind(row: FactRow, now: datetime) -> str:
    """How a version stands: current, closed (its valid time ended), alternative (outranked),
    withdrawn (retracted as never true) or archived."""
    if row.standing != "believed":
        return row.standing if row.standing in _FILL else "archived"
    if row.valid_until is not None and row.valid_until <= now:
        return "closed"
    return "current"


def timeline_svg(
    rows: Sequence[FactRow],
    *,
    title: str,
    now: datetime,
    valid_at: datetime | None = None,
) -> str:
    """The versions in `rows` as one SVG document: a bar per version from valid_from to
    valid_until (open-ended ones run to the right edge), ordered down by when the store
    learned them (`asserted_at`); `valid_at`, if given, is marked by a vertical line."""
    versions = sorted(rows, key=lambda r: (r.asserted_at, r.position))
    height = _TOP + _ROW * max(1, len(versions)) + 50
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" font-family="sans-serif" font-size="12" '
        'class="bitemporal">',
        f'<text x="10" y="18" font-size="14" font-weight="bold">{_text(title)}</text>',
        f'<text x="10" y="{_TOP - 8}" fill="#555">known since (down)</text>',
        *_legend(),
    ]
    if not versions:
        parts.append(f'<text x="{_LEFT}" y="{_TOP + 18}">no versions</text></svg>')
        return "\n".join(parts)
    start, end = _span(versions, now, valid_at)
    scale = _Scale(start, end)
    parts.extend(_axis(scale, height))
    for index, row in enumerate(versions):
        parts.extend(_bar(row, _TOP + index * _ROW, scale, now))
    if valid_at is not None and start <= valid_at <= end:
        x = scale.x(valid_at)
        parts.append(
            f'<line class="valid-at" x1="{x:.1f}" y1="{_TOP - 4}" x2="{x:.1f}" '
            f'y2="{height - 38}" stroke="#000" stroke-dasharray="4 3"/>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


class _Scale:
    """Valid time to x."""

    def __init__(self, start: datetime, end: datetime) -> None:
        self.start = start
        self.span = end - start
        self.seconds = max(self.span.total_seconds(), 1.0)

    def x(self, moment: datetime) -> float:
        share = (moment - self.start).total_seconds() / self.seconds
        return _LEFT + share * (_WIDTH - _LEFT - _RIGHT)


def _span(
    versions: Sequence[FactRow], now: datetime, valid_at: datetime | None
) -> tuple[datetime, datetime]:
    """The valid time the picture covers: every version's start and end, and now."""
    moments = [r.valid_from for r in versions]
    moments += [r.valid_until for r in versions if r.valid_until is not None]
    moments.append(max(now, *(r.asserted_at for r in versions)))
    if valid_at is not None:
        moments.append(valid_at)
    start, end = min(moments), max(moments)
    pad = max((end - start) / 20, timedelta(days=1))
    floor, ceiling = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)
    return (start - pad if start - floor > pad else floor), (
        end + pad if ceiling - end > pad else ceiling
    )


def _axis(scale: _Scale, height: int) -> list[str]:
    """The valid-time axis along the bottom, with dated ticks."""
    y = height - 38
    parts = [
        f'<line x1="{_LEFT}" y1="{y}" x2="{_WIDTH - _RIGHT}" y2="{y}" stroke="#444"/>',
        f'<text x="{_WIDTH - _RIGHT}" y="{height - 4}" text-anchor="end" fill="#555">'
        "valid time (across)</text>",
    ]
    for i in range(_TICKS + 1):
        moment = scale.start + scale.span * i / _TICKS
        x = scale.x(moment)
        parts.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#444"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{y + 16}" text-anchor="middle">{moment:%Y-%m-%d}</text>'
        )
    return parts


def _bar(row: FactRow, top: int, scale: _Scale, now: datetime) -> list[str]:
    """One version: its known date on the left, its valid time as a bar, its object on it."""
    kind = bar_kind(row, now)
    x0 = scale.x(row.valid_from)
    x1 = _WIDTH - _RIGHT if row.valid_until is None else scale.x(row.valid_until)
    until = "open" if row.valid_until is None else f"{row.valid_until:%Y-%m-%d}"
    shown = row.object if row.object is not None else row.fact
    tip = (
        f"{row.sentence()} ({kind}); valid {row.valid_from:%Y-%m-%d} to {until}; "
        f"known since {row.asserted_at:%Y-%m-%d %H:%M:%S}Z; position {row.position}"
    )
    dashed = ' stroke-dasharray="5 3"' if kind == "withdrawn" else ""
    return [
        f'<g class="version {kind}" data-fact-id={quoteattr(str(row.fact_id))}>',
        f"<title>{_text(tip)}</title>",
        f'<text x="{_LEFT - 8}" y="{top + 13}" text-anchor="end">'
        f"{row.asserted_at:%Y-%m-%d %H:%M}</text>",
        f'<rect x="{x0:.1f}" y="{top}" width="{max(x1 - x0, 2.0):.1f}" height="{_BAR}" rx="3" '
        f'fill="{_FILL[kind]}" fill-opacity="0.85" stroke="#222"{dashed}/>',
        f'<text x="{x0 + 4:.1f}" y="{top + 13}" fill="#fff">{_text(shown or "")}</text>',
        "</g>",
    ]


def _legend() -> list[str]:
    parts = []
    for index, (kind, colour) in enumerate(_FILL.items()):
        x = _LEFT + index * 120
        parts.append(f'<rect x="{x}" y="26" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text x="{x + 16}" y="36">{kind}</text>')
    return parts
