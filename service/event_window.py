"""When an event a question counts from happened: "before she moved" -> [.., the move).

The question names the event (`domain.recall.window.event_phrase`) and, somewhere, the
person; the memory says when: the newest version of the event's relation for that person
began with it (Alice moved when her current `lives_in` began). The window runs from the
start of recorded time to that moment ("before"), or from it to now ("after").
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final

from sqlalchemy import Connection

from apexmem.domain.recall.window import EARLIEST, event_phrase
from apexmem.readmodels import edge_history

__all__ = ["event_window"]

_NAME: Final = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")
_NOT_NAMES: Final = frozenset(
    (
        "where",
        "what",
        "when",
        "who",
        "whom",
        "whose",
        "which",
        "why",
        "how",
        "did",
        "does",
        "do",
        "was",
        "were",
        "is",
        "are",
        "has",
        "had",
        "have",
        "she",
        "he",
        "they",
        "her",
        "his",
        "their",
        "i",
        "we",
        "you",
        "it",
        "before",
        "after",
    )
)
"""Capitalized words that start a question or stand for a person, not a name."""


def event_window(
    connection: Connection, text: str, *, now: datetime, known_at: datetime | None
) -> tuple[datetime, datetime, str] | None:
    """The valid-time window an event in `text` bounds, as (start, end, phrase), from what
    the store held at `known_at` (now when None); None when the question names no event,
    or no person it names has a version of the event's relation that began by `now`."""
    found = event_phrase(text)
    if found is None:
        return None
    side, who, relation, phrase = found
    for name in _names(text, who):
        versions = edge_history(connection, name, [relation], known_at=known_at)
        began = [v.valid_from for v in versions if v.standing == "believed" and v.valid_from <= now]
        if began:
            moment = max(began)
            if side == "before":
                return EARLIEST, moment, phrase
            return moment, max(now, moment), phrase
    return None


def _names(text: str, who: str) -> list[str]:
    """The names the question gives, the one before the event's verb first."""
    found = [who] if who.lower() not in _NOT_NAMES else []
    for match in _NAME.finditer(text):
        words = [w for w in match.group().split() if w.lower() not in _NOT_NAMES]
        if words:
            found.append(" ".join(words))
    return list(dict.fromkeys(found))
