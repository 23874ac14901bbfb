"""Times as people type them: ISO 8601 with a zone, or the seeds' `YYYY-MM-DD HH:MM:SS` in UTC."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

from apexmem.events.errors import ValidationError
from apexmem.events.timeutil import OUT_OF_RANGE

__all__ = ["ACCEPTED_FORMS", "parse_time"]

ACCEPTED_FORMS: Final = (
    "2024-06-01T12:00:00+00:00, 2024-06-01T12:00:00Z or 2024-06-01 12:00:00 (UTC)"
)

_SEEDS_FORM: Final = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?")


def parse_time(field: str, text: str) -> datetime:
    """A timezone-aware UTC datetime from `text`, or ValidationError naming the accepted forms.

    `YYYY-MM-DD HH:MM:SS` (the seeds' storage form) is read as UTC; every other form must
    carry its zone, because a time without one is ambiguous.
    """
    value = text.strip()
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as e:
        raise ValidationError(field, text, f"is not a time; use {ACCEPTED_FORMS}") from e
    if parsed.tzinfo is None:
        if _SEEDS_FORM.fullmatch(value) is None:
            raise ValidationError(field, text, f"has no timezone; use {ACCEPTED_FORMS}")
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError as e:
        raise ValidationError(field, text, OUT_OF_RANGE) from e
