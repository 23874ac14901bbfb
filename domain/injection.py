"""The prompt-injection check: messages that try to instruct a model are stored, never extracted.

A message goes verbatim into the log whatever it says; what the check guards is the step
that turns text into entities and facts, often through a model's prompt. The rules are a
small deterministic list of the usual shapes (orders to ignore earlier instructions,
requests for the system prompt, chat-template markup, jailbreak names); the rule that
matched is recorded with the verdict, so a changed list never changes the past.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["INJECTION_RULES", "injection_verdict"]

_FILLER: Final = r"[^.!?\n]{0,40}?"
"""A few words of the same sentence between two parts of a rule."""

INJECTION_RULES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = tuple(
    (name, re.compile(pattern, re.IGNORECASE | re.MULTILINE))
    for name, pattern in (
        (
            "ignore-instructions",
            r"\b(?:ignore|disregard|forget|override|bypass)\b"
            + _FILLER
            + r"\b(?:previous|prior|above|earlier|preceding|all|your|my|system|these|those)\b"
            + _FILLER
            + r"\b(?:instructions?|prompts?|rules|directions|guidelines|directives)\b",
        ),
        (
            "reveal-prompt",
            r"\b(?:reveal|print|show|repeat|leak|output|dump)\b"
            + _FILLER
            + r"\b(?:system|hidden|initial|original)\s+(?:prompt|instructions?|message)",
        ),
        ("new-instructions", r"\b(?:new|updated|real|actual)\s+(?:system\s+)?instructions?\s*:"),
        (
            "role-override",
            r"\b(?:you\s+are\s+now|from\s+now\s+on,?\s+you\s+are|pretend\s+to\s+be|act\s+as)\s+"
            r"(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue)\b",
        ),
        ("jailbreak", r"\b(?:jailbreak|do\s+anything\s+now|developer\s+mode\s+enabled)\b"),
        (
            "chat-markup",
            r"<\|(?:im_start|im_end|system|endoftext)\|>|\[/?INST\]|<</?SYS>>"
            r"|^\s*#{2,}\s*(?:system|instructions?)\b",
        ),
        ("system-turn", r"^\s*system\s*:"),
    )
)
"""(name, pattern) in the order they are tried; the first that matches names the verdict."""

_INVISIBLE: Final = dict.fromkeys(
    (*range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF)
)
"""Zero-width and bidi characters, dropped first: they hide a rule's words from it."""


def injection_verdict(text: str) -> str | None:
    """The name of the first injection rule `text` matches, or None when it looks benign."""
    plain = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    for name, pattern in INJECTION_RULES:
        if pattern.search(plain):
            return name
    return None
