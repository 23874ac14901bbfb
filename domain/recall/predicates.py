"""The relation a question asks about, from its verb: "Where does Alice work?" -> works_at.

Words are matched by their start ("work", "works", "worked", "working"), so the table lists
stems. Each relation is a canonical one of the default ontology or one the built-in
extractor writes; a relation the ontology maps elsewhere is resolved by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = ["PREDICATES", "asked_relations"]

PREDICATES: Final[dict[str, tuple[str, ...]]] = {
    "work": ("works_at",),
    "job": ("works_at",),
    "employ": ("works_at",),
    "employer": ("works_at",),
    "live": ("lives_in",),
    "lived": ("lives_in",),
    "reside": ("lives_in",),
    "home": ("lives_in",),
    "born": ("born_in",),
    "birthplace": ("born_in",),
    "manage": ("manages",),
    "lead": ("manages",),
    "boss": ("manages",),
    "own": ("owns",),
    "use": ("uses",),
    "using": ("uses",),
    "know": ("knows",),
    "depend": ("depends_on",),
    "require": ("depends_on",),
    "like": ("likes",),
    "dislike": ("dislikes",),
    "prefer": ("prefers",),
    "study": ("studies",),
    "studie": ("studies",),
}
"""Question word stems -> the relations they ask about."""


def asked_relations(words: Sequence[str]) -> list[str]:
    """The relations the question's (lowercased) words ask about, in question order, once each."""
    found: list[str] = []
    for word in words:
        for stem, relations in PREDICATES.items():
            if word.startswith(stem) and len(word) - len(stem) <= 3:
                found += [r for r in relations if r not in found]
    return found
