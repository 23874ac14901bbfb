"""A recall's trace: what each stage found, with its scores, and how long it took.

Asked for with `recall(..., trace=True)`; a recall not asked pays one `None` check per
stage. Each stage lists its best candidates (at most `CANDIDATES_SHOWN`), best first, and
how many it had in all.
"""

from __future__ import annotations

from collections.abc import Iterable
from time import perf_counter
from typing import Final, Generic, TypeVar

import msgspec

__all__ = ["CANDIDATES_SHOWN", "TraceCandidate", "TraceStage", "Tracer"]

_K = TypeVar("_K")

CANDIDATES_SHOWN: Final = 20
"""Candidates a stage's trace lists at most (the best)."""


class TraceCandidate(msgspec.Struct, frozen=True, kw_only=True):
    """One candidate of a stage: a fact, a message or an entity (a seed)."""

    id: str
    """The fact version's, the message's or the entity's id."""
    score: float
    """Its score in that stage (BM25, cosine, activation, fused score...; higher is better)."""
    label: str
    """What it is: `fact <relation>`, `message`, or a seed's `entity <type>`."""


class TraceStage(msgspec.Struct, frozen=True, kw_only=True):
    """One stage of a recall: its best candidates and its wall time."""

    stage: str
    """`question`, `full text`, `vector`, `seeds`, `graph`, `fact links`, `context`, `fusion`."""
    ms: float
    """Milliseconds the stage took."""
    candidates: list[TraceCandidate]
    """Its best candidates, best first (at most `CANDIDATES_SHOWN`)."""
    total: int = 0
    """How many candidates it had in all."""


class Tracer(Generic[_K]):
    """Collects one recall's stages as they end (`lap`)."""

    def __init__(self) -> None:
        self.stages: list[TraceStage] = []
        self.listed: list[tuple[float, _K]] = []
        """What the recall's lists added (score, item) since the last stage ended."""
        self._since = perf_counter()

    def lap(self, stage: str, candidates: Iterable[TraceCandidate] = ()) -> None:
        """End `stage` now: its time since the previous stage ended, and its candidates."""
        now = perf_counter()
        found = sorted(candidates, key=lambda c: -c.score)
        self.stages.append(
            TraceStage(
                stage=stage,
                ms=round((now - self._since) * 1000.0, 3),
                candidates=found[:CANDIDATES_SHOWN],
                total=len(found),
            )
        )
        self.listed = []
        self._since = perf_counter()
