"""The one root of every error apexmem raises on purpose, and the subclasses a caller can act on.

The errors live in the lowest layer because the log raises them too; every other layer
imports them from here (and `apexmem` re-exports them).
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

__all__ = [
    "ApexmemError",
    "ConcurrencyError",
    "DiskFullError",
    "IntegrityViolation",
    "NotFoundError",
    "ValidationError",
]


class ApexmemError(Exception):
    """Root of every error apexmem raises on purpose."""


class ValidationError(ApexmemError):
    """Bad input: names the field, the value and the rule. Nothing was written."""

    def __init__(self, field: str, value: object, rule: str) -> None:
        self.field = field
        self.value = value
        self.rule = rule
        super().__init__(f"{field}: {_show(value)} {rule}")


class ConcurrencyError(ApexmemError):
    """A stream changed between reading its state and appending to it. Nothing was written."""


class DiskFullError(ApexmemError):
    """The disk holding the memory has no space left; what was committed before is intact.

    Free space and retry: a write retried with its idempotency key is not applied twice.
    """


class NotFoundError(ApexmemError):
    """The fact, entity or stream asked for does not exist."""


class IntegrityViolation(ApexmemError):
    """The log's files do not hold what the log wrote (the hash chain or the time index broke)."""


def _show(value: object) -> str:
    """The value as a message shows it: times and ids as written (ISO 8601, hex), the rest
    as Python would print it, cut to 80 characters."""
    shown = value.isoformat() if isinstance(value, datetime) else value
    try:
        text = repr(str(shown) if isinstance(shown, UUID) else shown)
    except RecursionError:  # a value decoded from deeply nested JSON
        return f"<{type(shown).__name__} nested too deeply to show>"
    return text if len(text) <= 80 else text[:77] + "..."
