"""Which facts recall shows, and when a fact stands in for the message it was learned from.

A co-mention ("Lisbon and Priya were mentioned together") seeds the graph but answers
nothing: recall leaves it out unless asked. A fact and the message it was learned from are
one piece of evidence, shown once: the fact in the message's place only when it is at
least as good evidence (a typed fact at confidence 0.5 or more, decayed to the moment
asked about); a co-mention or a low-confidence extraction never hides its message.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CO_MENTION_RELATION", "STANDS_IN_CONFIDENCE", "shown_by_default", "stands_in"]

CO_MENTION_RELATION: Final = "mentioned_with"
"""The built-in extractor's relation for two names of one message."""
STANDS_IN_CONFIDENCE: Final = 0.5
"""The confidence from which a fact is as good evidence as the message it came from."""


def shown_by_default(relation: str) -> bool:
    """Whether recall shows a fact of this relation without being asked (co-mentions: no)."""
    return relation != CO_MENTION_RELATION


def stands_in(relation: str, confidence: float) -> bool:
    """Whether a fact may take the place of the message it was learned from."""
    return shown_by_default(relation) and confidence >= STANDS_IN_CONFIDENCE
