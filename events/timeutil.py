"""Timezone-aware UTC datetimes: the only kind of time the log accepts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Final

import msgspec

from apexmem.events.errors import ValidationError

__all__ = ["EPOCH", "OUT_OF_RANGE", "UtcDateTime", "from_micros", "require_aware", "to_micros"]

UtcDateTime = Annotated[datetime, msgspec.Meta(tz=True)]
"""A datetime that must carry a timezone; msgspec refuses naive ones on decode."""

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
OUT_OF_RANGE: Final = "falls outside the years 1-9999 once converted to UTC"


def require_aware(field: str, value: datetime) -> datetime:
    """Return `value` in UTC, or raise ValidationError when it has no timezone."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(
            field,
            value,
            "is a naive datetime; pass a timezone-aware one, e.g. datetime(2024, 1, 1, tzinfo=UTC)",
        )
    try:
        return value.astimezone(UTC)
    except OverflowError as e:
        raise ValidationError(field, value, OUT_OF_RANGE) from e


def to_micros(value: datetime) -> int:
    """Microseconds since the Unix epoch, exact (no float rounding)."""
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    """The UTC datetime `micros` microseconds after the Unix epoch."""
    return EPOCH + timedelta(microseconds=micros)
