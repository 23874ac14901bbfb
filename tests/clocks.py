"""A clock a test moves by hand, for tests of decay, eviction and anything else that reads
the time (`Memory.open(clock=...)`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

START = datetime(2024, 1, 1, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand; it starts at START."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def days(self, days: float) -> datetime:
        """Move `days` on; the new time."""
        self.now += timedelta(days=days)
        return self.now

    def advance(self, seconds: float) -> None:
        """Move `seconds` on."""
        self.now += timedelta(seconds=seconds)
