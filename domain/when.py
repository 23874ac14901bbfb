"""Times a message names ("last week", "since March", "in 2019"), resolved against when it was said.

Finding the phrase is a small set of patterns here; turning it into a moment is
`dateparser`'s (a maintained library whose language data ships in its wheel), with the
message's time as the base and dates preferred from the past. A year alone starts on 1
January and a month alone on its first day, the start of the period the speaker named.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Final

import dateparser

__all__ = ["TIME_PHRASE", "named_time", "resolve"]

_MONTHS: Final = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DAYS: Final = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_COUNT: Final = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\ few|a\ couple\ of)"
)
_UNITS: Final = r"(?:days?|weeks?|months?|years?)"
TIME_PHRASE: Final = re.compile(
    rf"""\b(?:
        (?:the\ day\ before\ )?yesterday
      | (?:last|this\ past)\ (?:week(?:end)?|month|year|{_DAYS}|{_MONTHS})
      | {_COUNT}\ {_UNITS}\ ago
      | (?:since|in|back\ in|from)\ (?:(?:{_MONTHS})(?:\ \d{{4}})?|\d{{4}})
      | (?:since|from)\ (?:last\ (?:week|month|year)|yesterday)
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)
"""A time phrase a clause may hold, matched on lowercase or written text."""
_YEAR: Final = re.compile(r"^\d{4}$")
_MONTH: Final = re.compile(rf"^({_MONTHS})(?: (\d{{4}}))?$")
_LEAD: Final = re.compile(r"^(?:since|in|back in|from|this past)\s+", re.IGNORECASE)
_FEW: Final = {"a few": "3", "a couple of": "2"}
_SETTINGS: Final = {
    "PREFER_DATES_FROM": "past",
    "RETURN_AS_TIMEZONE_AWARE": True,
    "TIMEZONE": "UTC",
    "TO_TIMEZONE": "UTC",
}


def named_time(text: str, at: datetime) -> tuple[datetime | None, str]:
    """The first time phrase of `text` resolved against `at`, and the text without it."""
    match = TIME_PHRASE.search(text)
    if match is None:
        return None, text
    rest = (text[: match.start()] + text[match.end() :]).strip()
    return resolve(match.group(), at), re.sub(r"\s{2,}", " ", rest)


def resolve(phrase: str, at: datetime) -> datetime | None:
    """`phrase` as a moment, counted from `at` (timezone-aware, UTC); None when unreadable.

    Never after `at`: a speaker who says "in March" in February means last March.
    """
    base = at.astimezone(UTC).replace(tzinfo=None)
    return _resolve(phrase.strip().lower(), base)


@lru_cache(maxsize=4096)
def _resolve(phrase: str, base: datetime) -> datetime | None:
    bare = _LEAD.sub("", phrase)
    for few, count in _FEW.items():
        bare = bare.replace(few, count)
    if _YEAR.match(bare):
        year = int(bare)
        return datetime(year, 1, 1, tzinfo=UTC) if 1 <= year <= base.year else None
    if (month := _MONTH.match(bare)) is not None:
        return _month_start(month.group(1), month.group(2), base)
    found = dateparser.parse(bare, languages=["en"], settings={**_SETTINGS, "RELATIVE_BASE": base})
    if found is None:
        return None
    found = found.astimezone(UTC)
    return found if found <= base.replace(tzinfo=UTC) else None


def _month_start(name: str, year: str | None, base: datetime) -> datetime | None:
    """The first day of the month named: in `year`, else the latest one not after `base`."""
    number = next(i for i, m in enumerate(_MONTH_NAMES, start=1) if name.startswith(m))
    if year is not None:
        start = datetime(int(year), number, 1, tzinfo=UTC)
        return start if start <= base.replace(tzinfo=UTC) else None
    chosen = base.year if number <= base.month else base.year - 1
    return datetime(chosen, number, 1, tzinfo=UTC)


_MONTH_NAMES: Final = tuple(m[:3] for m in _MONTHS.split("|")[:12])
