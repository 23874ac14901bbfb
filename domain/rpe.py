"""The RPE gate (D-MEM): extract only the turns that surprise, never skip too many in a row.

A turn's surprise (its reward prediction error) is

    rpe = 0.5 * (1 - max cosine to the conversation's recent turns) + 0.5 * novelty

where novelty is the share of the turn's candidate names (capitalized words inside a
sentence, and words that name something the memory knows) that neither the memory nor the
recent turns hold; 0 when the turn has none. A turn below the threshold is skipped unless
`max_skip_turns` turns were skipped in a row before it; the first turn of a conversation is
always extracted. Pure: vectors, names and the state come in, a verdict and a state go out.
"""

from __future__ import annotations

import re
from collections.abc import Container
from enum import Enum
from typing import Final

import msgspec
import numpy as np
import numpy.typing as npt

from apexmem.domain.names import MIN_NAME_BYTES, normalize

__all__ = [
    "RECENT_TURNS",
    "Outcome",
    "Surprise",
    "Turn",
    "TurnState",
    "after",
    "candidate_names",
    "judge",
]

RECENT_TURNS: Final = 10
"""Turns of a conversation a new turn is compared with."""
_WORD: Final = re.compile(r"[^\W\d_][\w'\u2019\-]*")
_SENTENCE_ENDS: Final = frozenset(".!?:;\n")
_ACRONYM_UP_TO: Final = 5
"""All-capital words up to this long (API, HTTP, JSON) are not taken for names."""

_Vector = npt.NDArray[np.float32]


class Outcome(Enum):
    """What became of a turn, as far as skipping in a row goes."""

    EXTRACTED = "extracted"
    """Read by the extractor: the count of skips in a row starts again."""
    SKIPPED = "skipped"
    """Skipped by the gate, or not read yet (left pending): counts as skipped."""
    FLAGGED = "flagged"
    """Refused by the prompt-injection check: neither, the count stays."""


class Turn(msgspec.Struct, frozen=True):
    """A turn as the gate remembers it: its unit vector and its candidate names."""

    vector: _Vector
    names: frozenset[str]


class TurnState(msgspec.Struct, frozen=True):
    """A conversation's gate state: its recent turns, and how many were skipped in a row."""

    recent: tuple[Turn, ...] = ()
    skipped_in_row: int = 0


class Surprise(msgspec.Struct, frozen=True, kw_only=True):
    """The gate's verdict on a turn."""

    extract: bool
    rpe: float
    """The surprise, in [0, 1]."""
    similarity: float
    """The largest cosine (at least 0) to a recent turn."""
    novelty: float
    """The share of the turn's candidate names the memory and the recent turns lack."""
    forced: bool = False
    """Extracted however low `rpe` is: `max_skip_turns` turns were skipped before it."""


def judge(
    state: TurnState,
    turn: Turn,
    known: Container[str],
    *,
    threshold: float,
    max_skip_turns: int,
) -> Surprise:
    """Whether `turn` is extracted, given its conversation's state and the names known."""
    if not state.recent:
        return Surprise(extract=True, rpe=1.0, similarity=0.0, novelty=1.0)
    cosines = [float(np.dot(turn.vector, t.vector)) for t in state.recent]
    similarity = min(max(0.0, *cosines), 1.0)
    seen = set().union(*(t.names for t in state.recent))
    novel = [n for n in turn.names if n not in seen and n not in known]
    novelty = len(novel) / len(turn.names) if turn.names else 0.0
    rpe = 0.5 * (1.0 - similarity) + 0.5 * novelty
    if rpe >= threshold:
        return Surprise(extract=True, rpe=rpe, similarity=similarity, novelty=novelty)
    forced = state.skipped_in_row >= max_skip_turns
    return Surprise(extract=forced, rpe=rpe, similarity=similarity, novelty=novelty, forced=forced)


def after(state: TurnState, turn: Turn, outcome: Outcome) -> TurnState:
    """The state once `turn` had `outcome`: it joins the recent turns (the oldest leaves)."""
    recent = (*state.recent, turn)[-RECENT_TURNS:]
    if outcome is Outcome.EXTRACTED:
        return TurnState(recent, 0)
    if outcome is Outcome.SKIPPED:
        return TurnState(recent, state.skipped_in_row + 1)
    return TurnState(recent, state.skipped_in_row)


def candidate_names(text: str, known: Container[str]) -> frozenset[str]:
    """The names a turn may bring, normalized: capitalized words that do not start a
    sentence (not short all-capital acronyms), and words that name something known."""
    found: set[str] = set()
    for match in _WORD.finditer(text):
        word = match.group().rstrip("'\u2019-")
        key = normalize(word)
        if len(key.encode()) < MIN_NAME_BYTES:
            continue
        if key in known:
            found.add(key)
            continue
        starts = _starts_sentence(text, match.start())
        acronym = word.isupper() and len(word) <= _ACRONYM_UP_TO
        if word[0].isupper() and not starts and not acronym:
            found.add(key)
    return frozenset(found)


def _starts_sentence(text: str, at: int) -> bool:
    before = text[:at].rstrip(" \t\"'\u201c(")
    return not before or before[-1] in _SENTENCE_ENDS
