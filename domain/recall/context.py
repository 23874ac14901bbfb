"""Rendering recalled facts for a prompt: one line each, within a character budget."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

__all__ = ["clean_line", "format_lines"]

_UNSAFE: Final = re.compile(r"[\r\n<>]+")


def clean_line(text: str) -> str:
    """Stored text made safe for one prompt line: newlines and angle brackets become spaces."""
    return " ".join(_UNSAFE.sub(" ", text).split())


def format_lines(items: Iterable[tuple[str, float]], *, budget_chars: int) -> str:
    """`- <text> (confidence: 0.95)` per (text, confidence), best first, until the budget.

    A line that would pass the budget ends the list; nothing fits gives "".
    """
    lines: list[str] = []
    used = 0
    for text, confidence in items:
        line = f"- {clean_line(text)} (confidence: {confidence:.2f})"
        cost = len(line) + (1 if lines else 0)
        if used + cost > budget_chars:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines)
