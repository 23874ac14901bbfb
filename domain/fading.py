"""Decay passes, pure: from the facts the query-time rule says have faded and the fades
already recorded, the crossings one pass records.

The recorded state is the fold of the decay stream: a fact is recorded as faded from the
pass that named it faded until one names it restored. A pass at moment T names faded the
believed facts under the threshold at T not recorded as faded, and restored the recorded
ones believed and above it at T. So, after every pass, the facts recorded as faded among
those believed are exactly the ones the rule leaves out of recall at that pass's moment.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Final
from uuid import UUID, uuid5

import msgspec

from apexmem.domain.decay import FADED_BELOW, confidence_at
from apexmem.domain.identities import NS
from apexmem.events.fading import FactFade, FactsFaded, FadeReason

__all__ = ["FADES_ID", "FactDecay", "fold_fades", "plan_pass"]

FADES_ID: Final = uuid5(NS, "fades")
"""The decay stream: one `facts-faded.v1` event per pass that found a crossing."""


class FactDecay(msgspec.Struct, frozen=True, kw_only=True):
    """A believed fact version as the decay sees it at one moment."""

    fact_id: UUID
    slot_id: UUID
    edge_type: str
    confidence: float
    """As stored (before decay)."""
    observed_at: datetime
    rate: float
    """Its edge type's rate (per day) in force at the moment."""


def fold_fades(passes: Iterable[FactsFaded]) -> dict[UUID, FactFade]:
    """The facts recorded as faded after these passes (in log order), each with the fade
    that named it."""
    faded: dict[UUID, FactFade] = {}
    for done in passes:
        for fade in done.faded:
            faded[fade.fact_id] = fade
        for back in done.restored:
            faded.pop(back.fact_id, None)
    return faded


def plan_pass(
    *,
    at: datetime,
    previous: datetime | None,
    recorded: dict[UUID, FactFade],
    faded_now: Sequence[FactDecay],
    above_now: Sequence[FactDecay],
) -> FactsFaded | None:
    """The pass at `at`, or None when nothing crossed.

    `faded_now`: every believed fact under the threshold at `at` (the query-time rule);
    `above_now`: the facts of `recorded` that are believed and not under it at `at`.
    """
    faded = [_fade(f, at, "decayed") for f in faded_now if f.fact_id not in recorded]
    restored = [
        _fade(f, at, _why_back(f, recorded[f.fact_id])) for f in above_now if f.fact_id in recorded
    ]
    if not faded and not restored:
        return None
    return FactsFaded(
        at=at,
        previous=previous,
        threshold=FADED_BELOW,
        faded=sorted(faded, key=_order),
        restored=sorted(restored, key=_order),
    )


def _fade(fact: FactDecay, at: datetime, reason: FadeReason) -> FactFade:
    return FactFade(
        fact_id=fact.fact_id,
        slot_id=fact.slot_id,
        edge_type=fact.edge_type,
        rate=fact.rate,
        confidence=confidence_at(fact.confidence, fact.observed_at, at, fact.rate),
        observed_at=fact.observed_at,
        reason=reason,
    )


def _why_back(fact: FactDecay, fade: FactFade) -> FadeReason:
    # Passes only move forward in time, so a fact comes back by being observed again (a
    # later observation, or a higher confidence) or by a lower rate.
    if fact.observed_at <= fade.observed_at and fact.rate < fade.rate:
        return "rate changed"
    return "reinforced"


def _order(fade: FactFade) -> str:
    return str(fade.fact_id)
