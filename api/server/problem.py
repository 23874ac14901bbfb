"""Errors as `application/problem+json` (RFC 9457), shared by the HTTP API and the MCP HTTP guard.

A validation problem names the field, the value and the rule, as `ValidationError` does.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = ["MEDIA_TYPE", "Problem", "encode_problem", "problem"]

MEDIA_TYPE: Final = "application/problem+json"
_TYPE: Final = "urn:apexmem:problem:"
_VALUE_CHARS: Final = 200


class Problem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An error (RFC 9457); `field`, `value` and `rule` come with validation problems."""

    type: str
    """`urn:apexmem:problem:` and one of validation, not-found, conflict, unauthorized,
    too-large, malformed, internal, or the HTTP status for other framework errors."""
    title: str
    status: int
    detail: str
    instance: str | None = None
    """The request path."""
    field: str | None = None
    """The offending field (`facts[2].confidence`, a query parameter, `Idempotency-Key`)."""
    value: Any = None
    """The offending value, as sent (omitted when there was none)."""
    rule: str | None = None
    """The rule it broke."""


def problem(status: int, kind: str, title: str, detail: str, **extra: Any) -> Problem:
    """A problem of `kind` (validation, not-found, ...) with HTTP `status`.

    A `value` longer than 200 characters of JSON (a whole array of facts, a long query) is
    shown by its start, as text ending in "...".
    """
    if extra.get("value") is not None:
        extra["value"] = _clipped(extra["value"])
    return Problem(type=_TYPE + kind, title=title, status=status, detail=detail, **extra)


def _clipped(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= _VALUE_CHARS else value[: _VALUE_CHARS - 3] + "..."
    text = msgspec.json.encode(value, enc_hook=str).decode()
    return value if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 3] + "..."


def encode_problem(found: Problem) -> bytes:
    """The problem as JSON; a value JSON cannot hold is shown as text."""
    return msgspec.json.encode(found, enc_hook=str)
