"""Confidence decay in the read models: the rates in force at a transaction time, and the
SQL condition that keeps facts that have not faded (see domain.decay).

A query that leaves faded facts out is given a `Fading`: the moment the decay is measured
at and the rate of every edge type. Present queries measure at the clock's now; a view of
an earlier moment (`known_at` S) measures at S with the rates known then, so it shows what
the memory believed at S.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

import msgspec
from sqlalchemy import (
    BigInteger,
    ClauseElement,
    ColumnElement,
    Connection,
    Float,
    bindparam,
    case,
    func,
    literal,
    select,
    type_coerce,
)

from apexmem.domain.decay import FADED_BELOW, rates_in_force
from apexmem.domain.recall.scoring import decayed_confidence
from apexmem.events.base import EDGE_TYPES
from apexmem.readmodels.prepared import Prepared, stored_time
from apexmem.readmodels.tables import decay_rates, facts, stored_micros

__all__ = [
    "ConfidenceNow",
    "Fading",
    "fading_at",
    "fading_of",
    "fresh",
    "prepared_fresh",
    "rates_at",
]

_MICROS_PER_DAY: Final = 86_400 * 1_000_000


class Fading(msgspec.Struct, frozen=True, kw_only=True):
    """When decay is measured (`at`) and the rate (per day) of each edge type."""

    at: datetime
    rates: dict[str, float]

    def condition(self) -> ColumnElement[bool]:
        """`fresh` for this moment and these rates."""
        return fresh(self.at, self.rates)

    def params(self) -> dict[str, Any]:
        """The parameters of `prepared_fresh` (values as stored)."""
        found: dict[str, Any] = {"decay_at": stored_micros(self.at)}
        found.update((f"rate_{t}", float(self.rates.get(t, 0.0))) for t in EDGE_TYPES)
        return found


class ConfidenceNow:
    """A fact's confidence decayed to one moment at its edge type's rate (DESIGN 6.4's
    `confidence_now`): called with the stored confidence, observed_at as stored
    (microseconds) and the edge type."""

    def __init__(self, fading: Fading) -> None:
        self._at = stored_micros(fading.at) or 0
        self._rates = fading.rates

    def __call__(self, confidence: float, observed_at: int, edge_type: str) -> float:
        rate = self._rates.get(edge_type, 0.0)
        if rate <= 0.0 or observed_at >= self._at:
            return confidence
        return decayed_confidence(confidence, (self._at - observed_at) / _MICROS_PER_DAY, rate)


def rates_at(
    connection: Connection, *, default: float, known_at: datetime | None = None
) -> dict[str, float]:
    """The decay rate (per day) of every edge type as the store knew it at `known_at` (now
    when None): the latest set by a policy event, else `default`."""
    rows = _RATES.rows(connection, {"known_at": stored_micros(known_at)}, known_at is not None)
    return rates_in_force(dict(rows), default)


def _rates(known: bool) -> ClauseElement:
    statement = select(decay_rates.c.edge_type, decay_rates.c.rate).order_by(decay_rates.c.position)
    if known:
        statement = statement.where(stored_time(decay_rates.c.set_at) <= bindparam("known_at"))
    return statement


_RATES: Final = Prepared(_rates)
"""Asked by every recall that leaves faded facts out: run through the driver."""


def fading_at(
    connection: Connection, *, now: datetime, known_at: datetime | None, default: float
) -> Fading:
    """The `Fading` of a query as known at `known_at`: measured there (at `now` when None),
    with the rates in force then."""
    return fading_of(rates_at(connection, default=default, known_at=known_at), now, known_at)


def fading_of(rates: dict[str, float], now: datetime, known_at: datetime | None) -> Fading:
    """The `Fading` of a query as known at `known_at` (at `now` when None) with `rates` read."""
    return Fading(at=now if known_at is None else known_at, rates=rates)


def fresh(now: datetime, rates: Mapping[str, float]) -> ColumnElement[bool]:
    """Fact rows whose confidence decayed to `now` is at least FADED_BELOW (not faded).

    `confidence * exp(-rate * days since observed_at) >= 0.1`, the rate by edge type (a type
    missing from `rates` does not decay). Add it to a query's conditions beside `believed`;
    `now` is the moment asked about (a view's `known_at`, else the clock's now).
    """
    at: Any = literal(stored_micros(now), BigInteger)
    by_type = {edge_type: literal(float(r), Float) for edge_type, r in rates.items()}
    return _fresh(at, by_type)


def prepared_fresh() -> ColumnElement[bool]:
    """`fresh` for a `Prepared` statement: the parameters `decay_at` (as stored: microseconds)
    and `rate_<edge type>` for every edge type (see `Fading.params`)."""
    at: Any = bindparam("decay_at", type_=BigInteger)
    by_type = {t: bindparam(f"rate_{t}", type_=Float) for t in EDGE_TYPES}
    return _fresh(at, by_type)


def _fresh(at: Any, rates: Mapping[str, Any]) -> ColumnElement[bool]:
    observed = type_coerce(facts.c.observed_at, BigInteger)
    age = case((observed >= at, literal(0)), else_=at - observed)
    rate = case(rates, value=facts.c.edge_type, else_=literal(0.0)) if rates else literal(0.0)
    days = age / literal(float(_MICROS_PER_DAY))
    return facts.c.confidence * func.exp(-rate * days) >= FADED_BELOW
