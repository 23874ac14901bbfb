"""Text a memory can store: a str that UTF-8 can encode (no lone surrogate such as "\\ud800").

Python strings may hold lone surrogates (from `surrogateescape`, a bad JSON escape made by
another library, or a str sliced from UTF-16); the log stores UTF-8, so such a value would
fail only when written. Commands and query arguments are checked here, by one rule.
"""

from __future__ import annotations

from apexmem.events.errors import ValidationError

__all__ = ["require_utf8"]


def require_utf8(field: str, value: str) -> str:
    """`value`, when UTF-8 can encode it; else ValidationError naming `field` and where.

    ASCII text (`isascii` reads a flag, it does not scan) is never encoded.
    """
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValidationError(
                field, value, f"is not valid text: a lone surrogate at {e.start} (not UTF-8)"
            ) from e
    return value
