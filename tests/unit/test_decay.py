"""Confidence decay: the formula, the rates set by policy events, the SQL condition that
keeps facts that have not faded, and `apexmem decay-rate`."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from apexmem import Memory, ValidationError
from apexmem.cli import cli
from apexmem.domain.decay import FADED_BELOW, confidence_at, has_faded
from apexmem.readmodels.decay import fresh, rates_at
from apexmem.readmodels.tables import facts

NOW = datetime(2024, 6, 1, tzinfo=UTC)


def days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def test_confidence_decays_exponentially_from_the_last_observation() -> None:
    assert confidence_at(0.9, days_ago(0), NOW, 0.01) == 0.9
    assert math.isclose(confidence_at(1.0, days_ago(100), NOW, 0.01), math.exp(-1))
    assert confidence_at(0.8, NOW + timedelta(days=3), NOW, 0.01) == 0.8
    assert confidence_at(0.7, days_ago(1000), NOW, 0.0) == 0.7


def test_a_fact_fades_once_its_decayed_confidence_is_under_a_tenth() -> None:
    horizon = math.log(10) / 0.01  # about 230 days for a certain fact

    assert not has_faded(1.0, days_ago(horizon - 1), NOW, 0.01)
    assert has_faded(1.0, days_ago(horizon + 1), NOW, 0.01)
    assert has_faded(0.05, NOW, NOW, 0.0)
    assert FADED_BELOW == 0.1


def test_rates_in_force_come_from_policy_events_else_the_default(memory: Memory) -> None:
    assert memory.decay_rates() == {
        "semantic": 0.01,
        "temporal": 0.01,
        "causal": 0.01,
        "entity": 0.01,
    }
    memory.set_decay_rate("temporal", 0.02)
    between = memory.log.last_recorded_at()
    memory.set_decay_rate("temporal", 0.05)
    memory.set_decay_rate("causal", 0.0)

    now = memory.decay_rates()
    then = memory.decay_rates(known_at=between)
    memory.rebuild()

    assert (now["temporal"], now["causal"], now["semantic"]) == (0.05, 0.0, 0.01)
    assert then["temporal"] == 0.02
    assert memory.decay_rates() == now


def fresh_ids(memory: Memory, now: datetime, rates: dict[str, float]) -> set[Any]:
    with memory.store.read() as connection:
        rows = connection.execute(
            select(facts.c.fact_id).where(facts.c.expired_at.is_(None), fresh(now, rates))
        )
        return set(rows.scalars())


def fact(name: str, observed: datetime, **extra: Any) -> dict[str, Any]:
    return {"subject": name, "relation": "uses", "object": "Rust", "observed_at": observed, **extra}


def test_the_fresh_condition_keeps_facts_that_have_not_faded(memory: Memory) -> None:
    recent, old, weak, slow = memory.assert_facts(
        [
            fact("Alice", days_ago(10)),
            fact("Bob Stone", days_ago(400)),
            fact("Carol", NOW, confidence=0.05),
            fact("Dave", days_ago(400), edge_type="temporal"),
        ]
    )
    with memory.store.read() as connection:
        rates = rates_at(connection, default=0.01)

    kept = fresh_ids(memory, NOW, {**rates, "temporal": 0.001})

    assert kept == {recent.fact_id, slow.fact_id}
    assert old.fact_id not in kept and weak.fact_id not in kept


def test_observing_a_faded_fact_again_restores_its_confidence(memory: Memory) -> None:
    old = memory.assert_fact(**fact("Alice", days_ago(400), confidence=0.9))
    rates = {"semantic": 0.01}
    assert fresh_ids(memory, NOW, rates) == set()

    again = memory.assert_fact(**fact("Alice", NOW, confidence=0.6))

    assert (again.outcome, again.fact_id) == ("reinforced", old.fact_id)
    assert fresh_ids(memory, NOW, rates) == {old.fact_id}
    assert fresh_ids(memory, NOW + timedelta(days=math.log(9) / 0.01 - 1), rates) == {old.fact_id}


def test_apexmem_decay_rate_sets_one_rate_and_shows_them_all(tmp_path: Any) -> None:
    db = str(tmp_path / "mem")
    (tmp_path / "mem").mkdir()
    (tmp_path / "mem" / "apexmem.toml").write_text('[memory.vectors]\nembedder = "hashing"\n')
    runner = CliRunner()

    set_one = runner.invoke(
        cli, ["--db", db, "--json", "decay-rate", "--edge-type", "temporal", "--rate", "0.02"]
    )
    shown = runner.invoke(cli, ["--db", db, "decay-rate"])
    half = runner.invoke(cli, ["--db", db, "decay-rate", "--rate", "0.5"])

    assert set_one.exit_code == 0, set_one.output
    assert '"temporal":0.02' in set_one.output
    assert '"semantic":0.01' in set_one.output
    assert "temporal" in shown.output and "0.02" in shown.output
    assert half.exit_code == 2
    assert "give both --edge-type and --rate" in half.output


@pytest.mark.parametrize("rate", ["-1", "11", "nan"])
def test_apexmem_decay_rate_refuses_a_rate_out_of_range(tmp_path: Any, rate: str) -> None:
    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path), "decay-rate", "--edge-type", "causal", "--rate", rate]
    )

    if rate == "nan":  # past click's range check; the command's validation names the rule
        assert isinstance(result.exception, ValidationError)
        assert "not a finite number" in str(result.exception)
    else:
        assert result.exit_code == 2
        assert "--rate" in result.output
