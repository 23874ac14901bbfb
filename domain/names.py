"""Name normalization: the canonical form that identifies an entity, and the display form."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Final

from apexmem.events.base import MAX_NAME_BYTES, MAX_RELATION_BYTES
from apexmem.events.errors import ValidationError

__all__ = [
    "MAX_INPUT_NAME_BYTES",
    "MIN_NAME_BYTES",
    "canonical_name",
    "clean",
    "clean_sentence",
    "cut_utf8",
    "display_name",
    "normalize",
    "normalize_relation",
]

MIN_NAME_BYTES: Final = 3
"""Names an extractor proposes shorter than this are dropped (a stray "Hi" or "OK" is not an
entity); a name asserted explicitly needs only one byte ("R", "Go", "UK")."""
MAX_INPUT_NAME_BYTES: Final = 4096
"""Names longer than this are refused; shorter ones are cut to 512 bytes when normalized."""
_SPACES: Final = re.compile(r"[\s\-]+")


def cut_utf8(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, never inside a character."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode(errors="ignore")


def clean(text: str) -> str:
    """Drop control characters and format (bidi, zero-width) characters."""
    if text.isprintable():
        return text
    return "".join(c for c in text if unicodedata.category(c) not in ("Cc", "Cf"))


def clean_sentence(text: str) -> str:
    """`clean` for running text: a line break or a tab becomes a space first.

    So "uses\ncargo" stays two words (names, per the reference, drop them outright).
    """
    if text.isprintable():
        return text
    return clean("".join(" " if c.isspace() else c for c in text))


def normalize(name: str) -> str:
    """Trim, lowercase, strip control and bidi/format characters, cut to 512 bytes."""
    # Strip again after the cut, so normalizing a canonical name gives it back unchanged.
    return cut_utf8(clean(name.strip().lower()).strip(), MAX_NAME_BYTES).rstrip()


@lru_cache(maxsize=65_536)
def canonical_name(field: str, name: str) -> str:
    """The canonical name of `name`, or ValidationError when it is over 4,096 bytes or
    nothing remains (every entity name is checked here, once per distinct name)."""
    if len(name) * 4 > MAX_INPUT_NAME_BYTES and len(name.encode()) > MAX_INPUT_NAME_BYTES:
        raise ValidationError(field, name, f"is longer than {MAX_INPUT_NAME_BYTES} bytes")
    canonical = normalize(name)
    if not canonical:
        raise ValidationError(field, name, "is empty after normalization")
    return canonical


@lru_cache(maxsize=65_536)
def display_name(name: str) -> str:
    """The display form: the caller's casing, trimmed, without control characters."""
    return cut_utf8(clean(name.strip()).strip(), MAX_NAME_BYTES).rstrip()


@lru_cache(maxsize=4096)
def normalize_relation(field: str, relation: str) -> str:
    """A relation as the ontology keys it: trimmed, lowercase, runs of spaces and dashes as `_`."""
    normalized = _SPACES.sub("_", clean(relation.strip().lower()).strip())
    if not normalized:
        raise ValidationError(field, relation, "is empty after normalization")
    if len(normalized.encode()) > MAX_RELATION_BYTES:
        raise ValidationError(field, relation, f"is longer than {MAX_RELATION_BYTES} bytes")
    return normalized
