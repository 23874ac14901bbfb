"""The valid-time window a question names: "Where did Alice work in 2019?" -> [2019, 2020).

A recall asked about a window sees the facts whose validity overlaps it. The forms read:

- a period: "in 2019", "in May 2023", "last year", "since March" (found and resolved as a
  message's times are, `domain.when`, against `now` or the caller's reference time; "last
  year" and "last month" are the calendar's); it ends a year, a month, a week or a day
  after it starts ("since ...": at `now`);
- a season: "last summer", "this winter", "in the summer of 2020", "spring 2019"
  (meteorological, northern: spring March-May, summer June-August, autumn September-
  November, winter December to February); "last summer" is the latest that has ended;
- a bound: "before 2019" (from the start of recorded time to the period's start), "after
  May 2023" (from the period's end to `now`), "between 2018 and 2020" / "from 2018 to 2020"
  (the first's start to the second's end);
- an event ("before she moved", "after he changed jobs") is only recognized here
  (`event_phrase`): when it happened is the memory's to say (`service.event_window`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Final

from apexmem.domain.when import TIME_PHRASE, resolve

__all__ = [
    "EARLIEST",
    "EVENT_RELATIONS",
    "event_phrase",
    "question_window",
    "window_end",
    "window_why",
]

EARLIEST: Final = datetime(1, 1, 1, tzinfo=UTC)
"""Where a window with no start ("before 2019") starts."""

_MONTHS: Final = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_YEAR_ONLY: Final = re.compile(r"\b\d{4}$")
_MONTH_WORDS: Final = re.compile(
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*(?: \d{4})?$"
)
_PERIOD: Final = rf"(?:(?:{_MONTHS})(?:\s+\d{{4}})?|\d{{4}})"
"""A period a bound names: a year, a month, or a month of a year."""
_SEASON_NAMES: Final = "spring|summer|autumn|fall|winter"
_SEASON: Final = re.compile(
    rf"""\b(?:
        (?P<which>last|this\ past|this)\s+(?P<named>{_SEASON_NAMES})
      | (?:in\s+)?(?:the\s+)?(?P<of>{_SEASON_NAMES})\s+(?:of\s+)?(?P<year>\d{{4}})
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)
_SEASON_START: Final = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_BETWEEN: Final = re.compile(
    rf"\b(?:between|from)\s+(?P<first>{_PERIOD})\s+(?:and|to|until|till)\s+(?P<last>{_PERIOD})\b",
    re.IGNORECASE,
)
_BOUND: Final = re.compile(rf"\b(?P<side>before|after)\s+(?P<period>{_PERIOD})\b", re.IGNORECASE)
EVENT_RELATIONS: Final = {
    "moved": "lives_in",
    "relocated": "lives_in",
    "changed jobs": "works_at",
    "switched jobs": "works_at",
    "changed job": "works_at",
}
"""The events a question may count from, and the relation whose newest version started
then ("moved": the current `lives_in` began)."""
_EVENT: Final = re.compile(
    r"\b(?P<side>before|after)\s+(?P<who>\w+(?:\s+\w+)?)\s+(?P<did>"
    + "|".join(re.escape(e) for e in EVENT_RELATIONS)
    + r")\b",
    re.IGNORECASE,
)


def window_end(phrase: str, start: datetime, now: datetime) -> datetime:
    """Where the period `phrase` names, starting at `start`, ends (`now` for "since ...")."""
    bare = phrase.strip().lower()
    if bare.startswith(("since", "from")):
        return max(now, start)
    if "year" in bare or (_YEAR_ONLY.search(bare) and not _MONTH_WORDS.search(bare)):
        return start.replace(year=start.year + 1)
    if "month" in bare or _MONTH_WORDS.search(bare):
        return _next_month(start)
    if "week" in bare:
        return start + timedelta(days=7)
    return start + timedelta(days=1)


def question_window(text: str, now: datetime) -> tuple[datetime, datetime, str] | None:
    """The valid-time window `text` names as (start, end, phrase), resolved against `now`;
    None when the question names no time or it cannot be read (see the module docstring)."""
    for read in (_between, _bound, _season, _period):
        found = read(text, now)
        if found is not None:
            return found
    return None


def event_phrase(text: str) -> tuple[str, str, str, str] | None:
    """The event a question counts from ("before she moved") as (side, who, relation,
    phrase): `side` "before" or "after", `who` the word(s) naming the person, `relation`
    the one whose newest version began with the event; None when it names none."""
    match = _EVENT.search(text)
    if match is None:
        return None
    did = " ".join(match.group("did").lower().split())
    return match.group("side").lower(), match.group("who"), EVENT_RELATIONS[did], match.group()


def window_why(start: datetime, end: datetime, phrase: str) -> str:
    """The line `why` shows for a window asked about."""
    named = f" ({phrase!r})" if phrase else ""
    if start == EARLIEST:
        return f"valid time asked about: before {end.date()}{named}"
    return f"valid time asked about: {start.date()} to {end.date()}{named}"


def _period(text: str, now: datetime) -> tuple[datetime, datetime, str] | None:
    match = TIME_PHRASE.search(text)
    if match is None:
        return None
    calendar = _CALENDAR.get(" ".join(match.group().lower().split()))
    # "last year" is the calendar year before, not the 365 days before.
    start = calendar(now) if calendar is not None else resolve(match.group(), now)
    if start is None:
        return None
    return start, window_end(match.group(), start, now), match.group()


def _named_period(phrase: str, now: datetime) -> tuple[datetime, datetime] | None:
    """The period a bound names ("2019", "May 2023", "May"), or None."""
    start = resolve(phrase, now)
    return None if start is None else (start, window_end(phrase, start, now))


def _between(text: str, now: datetime) -> tuple[datetime, datetime, str] | None:
    match = _BETWEEN.search(text)
    if match is None:
        return None
    first = _named_period(match.group("first"), now)
    last = _named_period(match.group("last"), now)
    if first is None or last is None or last[1] < first[0]:
        return None
    return first[0], last[1], match.group()


def _bound(text: str, now: datetime) -> tuple[datetime, datetime, str] | None:
    match = _BOUND.search(text)
    if match is None:
        return None
    period = _named_period(match.group("period"), now)
    if period is None:
        return None
    if match.group("side").lower() == "before":
        return EARLIEST, period[0], match.group()
    return period[1], max(now, period[1]), match.group()


def _season(text: str, now: datetime) -> tuple[datetime, datetime, str] | None:
    match = _SEASON.search(text)
    if match is None:
        return None
    if match.group("year") is not None:
        name, year = match.group("of").lower(), int(match.group("year"))
        start = datetime(year, _SEASON_START[name], 1, tzinfo=UTC)
    else:
        name, which = match.group("named").lower(), match.group("which").lower()
        start = _latest_season(name, now, ended=which != "this")
    return start, _next_month(_next_month(_next_month(start))), match.group()


def _latest_season(name: str, now: datetime, *, ended: bool) -> datetime:
    """The start of the latest `name` season that has begun by `now` (that has ended, when
    `ended`: "last summer" in July is the one before)."""
    month = _SEASON_START[name]
    start = datetime(now.year, month, 1, tzinfo=UTC)
    while start > now or (ended and _next_month(_next_month(_next_month(start))) > now):
        start = start.replace(year=start.year - 1)
    return start


def _next_month(start: datetime) -> datetime:
    return (start.replace(day=28) + timedelta(days=4)).replace(day=1)


def _last_month(now: datetime) -> datetime:
    first = datetime(now.year, now.month, 1, tzinfo=UTC)
    return (first - timedelta(days=1)).replace(day=1)


_CALENDAR: Final = {
    "last year": lambda now: datetime(now.year - 1, 1, 1, tzinfo=UTC),
    "this past year": lambda now: datetime(now.year - 1, 1, 1, tzinfo=UTC),
    "last month": _last_month,
    "this past month": _last_month,
}
"""Relative periods read as the calendar's: the year or the month before `now`'s."""
