"""Correctness against the ground truth, and as-of query latency on the same questions.

Two checks gate the suite: every single-valued slot has exactly one current version, the
one the truth says; and every as-of question (`facts_about` at valid time T as known at S,
and the two one-axis forms) gives exactly the facts the truth gives.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Final

from progress import stage
from project import naive
from recall import percentiles
from truth import FOREVER, Probe, Triple, Truth, recorded_at, valid_time

from apexmem import Memory
from apexmem.readmodels.facts import believed, fact_rows, rows_statement
from apexmem.readmodels.tables import facts
from apexmem.service.view import View

__all__ = ["AXES", "SINGLE_VALUED", "as_of", "current_versions", "naive_baseline"]

SINGLE_VALUED: Final = ("works_at", "lives_in", "manages")
AXES: Final = ("valid_at+known_at", "valid_at", "known_at")
"""The as-of forms asked: both time axes, valid time alone (known now), known time alone
(the versions open-ended then)."""
_EXAMPLES: Final = 5
_WARM_UP: Final = 20


def current_versions(memory: Memory, truth: Truth, size: int) -> dict[str, Any]:
    """Each single-valued slot's current versions (believed, open-ended, not expired) against
    the truth: exactly one each, with the truth's object; no slot the truth does not have."""
    expected = truth.current()
    with stage("check: current versions", None, size=size):
        statement = rows_statement().where(
            facts.c.relation.in_(SINGLE_VALUED), *believed(None, None)
        )
        with memory.store.read() as connection:
            rows = fact_rows(connection, statement)
    found: dict[tuple[str, str], list[str | None]] = defaultdict(list)
    for row in rows:
        found[(row.subject, row.relation)].append(row.object)
    wrong = [
        {"slot": list(key), "expected": [expected.get(key)], "found": found.get(key, [])}
        for key in sorted(expected.keys() | found.keys())
        if found.get(key, []) != [expected.get(key)]
    ]
    return {
        "slots": len(expected),
        "rows": len(rows),
        "correct": len(expected) - len(wrong),
        "share": (len(expected) - len(wrong)) / len(expected) if expected else 1.0,
        "wrong_examples": wrong[:_EXAMPLES],
    }


def as_of(
    memory: Memory, truth: Truth, probes: Sequence[Probe], axes: str, size: int
) -> dict[str, Any]:
    """Ask every probe in one form (`axes`), timed each, and compare with the truth."""
    last = truth.last_append
    asked = [_form(p, axes) for p in probes]
    for probe in asked[:_WARM_UP]:
        _ask(memory, probe)
    latencies, sizes, wrong = [], [], []
    with stage(f"as-of: {axes}", len(asked), size=size) as advance:
        for i, probe in enumerate(asked):
            started = time.perf_counter()
            got = _ask(memory, probe)
            latencies.append(time.perf_counter() - started)
            known = last if probe.known is None else probe.known
            expected = truth.about(probe.name, _valid_then(probe), known)
            sizes.append(len(got))
            if got != expected:
                wrong.append(_difference(probe, expected, got))
            advance(i + 1)
    return {
        "probes": len(asked),
        **percentiles(latencies),
        "mean_facts_per_answer": statistics.fmean(sizes),
        "empty_answers": sum(1 for s in sizes if s == 0),
        "correct": len(asked) - len(wrong),
        "share": (len(asked) - len(wrong)) / len(asked),
        "wrong_examples": wrong[:_EXAMPLES],
    }


def _form(probe: Probe, axes: str) -> Probe:
    if axes == "valid_at":
        return probe._replace(known=None)
    if axes == "known_at":
        return probe._replace(valid=FOREVER)
    return probe


def _valid_then(probe: Probe) -> int:
    """The valid time a probe's answer holds at: the one asked, else, for a view at a past
    moment, that moment (what was current then: begun, and not yet ended)."""
    moment = probe.known_at()
    if probe.valid != FOREVER or moment is None:
        return probe.valid
    return int((moment - valid_time(0)).total_seconds())


def _ask(memory: Memory, probe: Probe) -> list[Triple]:
    view: View = memory if probe.known is None else memory.as_of(known_at=probe.known_at())
    rows = view.facts_about(probe.name, valid_at=probe.valid_at())
    return sorted((r.subject, r.relation, r.object or "") for r in rows)


def _difference(probe: Probe, expected: list[Triple], got: list[Triple]) -> dict[str, Any]:
    return {
        "name": probe.name,
        "valid_at": str(probe.valid_at()),
        "known_at": str(probe.known_at()),
        "missing": sorted(set(expected) - set(got))[:_EXAMPLES],
        "unexpected": sorted(set(got) - set(expected))[:_EXAMPLES],
    }


def naive_baseline(
    memory: Memory, truth: Truth, probes: Sequence[Probe], read_model_p50_ms: float, size: int
) -> dict[str, Any]:
    """bench/project.py's naive answer (fold the whole log up to S, then filter) for a few
    probes that ask by name (the fold matches display names, not aliases)."""
    asked = [
        (p.name, recorded_at(p.known), valid_time(p.valid))
        for p in probes
        if p.name not in truth.aliases and p.known is not None and p.valid != FOREVER
    ]
    with stage("as-of: naive full replay", None, size=size):
        return naive(memory, asked, read_model_p50_ms)
