"""Confidence decay in the read models: the rates in force at a transaction time, and the
SQL condition that keeps facts that have not faded (see domain.decay)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Final

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    case,
    func,
    literal,
    select,
    type_coerce,
)

from apexmem.domain.decay import FADED_BELOW, rates_in_force
from apexmem.readmodels.tables import decay_rates, facts, stored_micros

__all__ = ["fresh", "rates_at"]

_MICROS_PER_DAY: Final = 86_400 * 1_000_000


def rates_at(
    connection: Connection, *, default: float, known_at: datetime | None = None
) -> dict[str, float]:
    """The decay rate (per day) of every edge type as the store knew it at `known_at` (now
    when None): the latest set by a policy event, else `default`."""
    statement = select(decay_rates.c.edge_type, decay_rates.c.rate).order_by(decay_rates.c.position)
    if known_at is not None:
        statement = statement.where(decay_rates.c.set_at <= known_at)
    latest = {r.edge_type: r.rate for r in connection.execute(statement)}
    return rates_in_force(latest, default)


def fresh(now: datetime, rates: Mapping[str, float]) -> ColumnElement[bool]:
    """Fact rows whose confidence decayed to `now` is at least FADED_BELOW (not faded).

    `confidence * exp(-rate * days since observed_at) >= 0.1`, the rate by edge type (a type
    missing from `rates` does not decay). Add it to a query's conditions beside `believed`;
    `now` is the moment asked about (a view's `known_at`, else the clock's now).
    """
    at = stored_micros(now)
    observed = type_coerce(facts.c.observed_at, BigInteger)
    age = case((observed >= at, literal(0)), else_=literal(at) - observed)
    rate = case(
        {edge_type: literal(r) for edge_type, r in rates.items()},
        value=facts.c.edge_type,
        else_=literal(0.0),
    )
    days = age / literal(float(_MICROS_PER_DAY))
    return facts.c.confidence * func.exp(-rate * days) >= FADED_BELOW
