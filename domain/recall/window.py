"""The valid-time window a question names: "Where did Alice work in 2019?" -> [2019, 2020).

The phrase is found and its start resolved as a message's times are (`domain.when`,
against `now` or the caller's reference time); its end is the start plus the period the
phrase names (a year, a month, a week, a day).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Final

from apexmem.domain.when import TIME_PHRASE, resolve

__all__ = ["question_window", "window_end"]

_YEAR_ONLY: Final = re.compile(r"\b\d{4}$")
_MONTH_WORDS: Final = re.compile(
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*(?: \d{4})?$"
)


def window_end(phrase: str, start: datetime, now: datetime) -> datetime:
    """Where the period `phrase` names, starting at `start`, ends (`now` for "since ...")."""
    bare = phrase.strip().lower()
    if bare.startswith(("since", "from")):
        return max(now, start)
    if "year" in bare or (_YEAR_ONLY.search(bare) and not _MONTH_WORDS.search(bare)):
        return start.replace(year=start.year + 1)
    if "month" in bare or _MONTH_WORDS.search(bare):
        return (start.replace(day=28) + timedelta(days=4)).replace(day=1)
    if "week" in bare:
        return start + timedelta(days=7)
    return start + timedelta(days=1)


def question_window(text: str, now: datetime) -> tuple[datetime, datetime, str] | None:
    """The first time phrase of `text` as (start, end, phrase), resolved against `now`;
    None when the question names no time or it cannot be read."""
    match = TIME_PHRASE.search(text)
    if match is None:
        return None
    start = resolve(match.group(), now)
    if start is None:
        return None
    return start, window_end(match.group(), start, now), match.group()
