"""The append stage: the workload into the log (batched, then single-fact appends) and the
raw SQLite ceiling, in one process; and the default single write that also projects, into
the memory once projected (`inline_writes`, in a process of its own).

The log is written with inline projection off, as an agent's process does while
`apexmem project --follow` projects in another; the bench's clock gives append n the
recorded time `truth.recorded_at(n)`, so the ground truth knows what was known when.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from append import LOG_ONLY, ceilings, workload
from dataclock import data_clock
from places import Place
from progress import finished_stages, peak_rss_bytes, stage
from recall import percentiles
from truth import recorded_at
from workload import Item, Retract, Workload

from apexmem import Command, FactRef, Memory, Result, RetractFact, Settings

__all__ = ["SettableClock", "ingest", "inline_writes"]


class SettableClock:
    """The time the next append is recorded at, set by the bench before each append."""

    def __init__(self) -> None:
        self.now = recorded_at(0)

    def __call__(self) -> datetime:
        return self.now


class _Appender:
    """Turns items into commands (a Retract names the fact its target created) and checks
    that every remembered target created a fact."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.created: dict[int, UUID] = {}
        self.outcomes: Counter[str] = Counter()
        self.sequence = 0

    def commands(self, items: list[Item]) -> list[Command]:
        return [self._command(item) for item in items]

    def learn(self, results: list[Result]) -> None:
        for result in results:
            if isinstance(result, FactRef):
                self.outcomes[result.outcome] += 1
                if self.sequence in self.workload.remember:
                    if result.outcome != "created":
                        self.outcomes["retraction_target_not_created"] += 1
                    self.created[self.sequence] = result.fact_id
            self.sequence += 1

    def _command(self, item: Item) -> Command:
        if not isinstance(item, Retract):
            return item
        fact_id = self.created.pop(item.target)
        return RetractFact(
            fact_id=fact_id, valid_until=item.valid_until, reason=item.reason, actor="bench"
        )


def ingest(
    directory: Path,
    workload: Workload,
    *,
    place: Place | None = None,
) -> dict[str, Any]:
    """Write the workload into `place` (default `directory`/memory), then the comparison
    runs beside it (the raw SQLite ceilings only beside a SQLite memory)."""
    memory_dir = directory / "memory"
    if place is not None and place.url is not None:
        return _ingest(place, workload)
    result, marks = _append(str(memory_dir), workload)
    result["log_bytes"] = _log_bytes(memory_dir)
    with (
        tempfile.TemporaryDirectory(dir=directory) as scratch,
        stage("raw SQLite ceilings", None, size=workload.facts),
    ):
        ends = [position for position, _ in marks[1:]]
        result.update(ceilings(memory_dir / "events.db", ends, Path(scratch)))
    rate = result["batched"]["events_per_s"]
    result["batched_share_of_raw"] = rate / result["raw_sqlite"]["rows_per_s"]
    result["batched_share_of_sequential_keys"] = (
        rate / result["raw_sqlite_sequential_keys"]["rows_per_s"]
    )
    result["stages"] = finished_stages()
    return result


def _ingest(place: Place, workload: Workload) -> dict[str, Any]:
    """`ingest` into a PostgreSQL schema."""
    result, _ = _append(place.memory, workload)
    result["stages"] = finished_stages()
    return result


def _append(place: str, workload: Workload) -> tuple[dict[str, Any], list[tuple[int, float]]]:
    """The workload into the memory at `place`: the figures, and (events, seconds) after each
    batched append."""
    appender = _Appender(workload)
    clock = SettableClock()
    batched: list[float] = []
    singles: list[float] = []
    batched_events = 0
    marks: list[tuple[int, float]] = [(0, 0.0)]
    with Memory.open(place, settings=LOG_ONLY, clock=clock) as memory:
        with stage("append", workload.facts, size=workload.facts) as advance:
            for number, items in enumerate(workload.appends()):
                if workload.single_phase and not singles:
                    batched_events = memory.log.last_position()
                commands = appender.commands(items)
                clock.now = recorded_at(number)
                started = time.perf_counter()
                results = memory.execute(commands)
                if workload.single_phase:
                    singles.append(time.perf_counter() - started)
                else:
                    batched.append(time.perf_counter() - started)
                    marks.append((memory.log.last_position(), marks[-1][1] + batched[-1]))
                appender.learn(results)
                advance(workload.asserted)
        events = memory.log.last_position()
        clock_kept = memory.log.last_recorded_at() == recorded_at(workload.last_append)
    result: dict[str, Any] = {
        "items": appender.sequence,
        "appends": workload.appends_made,
        "events": events,
        "commands": dict(sorted(workload.counts.items())),
        "outcomes": dict(sorted(appender.outcomes.items())),
        "recorded_times_as_set": clock_kept,
        "batched": _rates(batched, workload, batched_events or events),
        "batched_by_tenth": _by_tenth(marks),
        "single": {
            "appends": len(singles),
            "seconds": sum(singles),
            "appends_per_s": len(singles) / sum(singles) if singles else None,
            **(percentiles(singles) if len(singles) > 1 else {}),
        },
        "peak_rss_bytes": peak_rss_bytes(),
    }
    return result, marks


def _rates(latencies: list[float], workload: Workload, events: int) -> dict[str, Any]:
    seconds, facts = sum(latencies), workload.facts - workload.single
    return {
        "appends": len(latencies),
        "items_per_append": workload.batch,
        "facts": facts,
        "events": events,
        "seconds": seconds,
        "facts_per_s": facts / seconds,
        "events_per_s": events / seconds,
    }


def _by_tenth(marks: list[tuple[int, float]]) -> list[float]:
    """Events per second over each tenth of the batched appends: the curve as the log grows."""
    cuts = [marks[round(i * (len(marks) - 1) / 10)] for i in range(11)]
    return [
        (end[0] - start[0]) / (end[1] - start[1])
        for start, end in itertools.pairwise(cuts)
        if end[1] > start[1]
    ]


def inline_writes(place: str, count: int, settings: Settings, size: int) -> dict[str, Any] | None:
    """`count` facts, one per append, into the memory at `place` (the memory of this size,
    projected), each projected inline (graph, full text, vectors and the FAISS index) before
    its call returns, as an agent's process writes with the default settings; after one
    untimed write, which loads the embedding model. The clock runs on from the memory's
    last recorded time."""
    if count <= 0:
        return None
    last = data_clock(place)()
    started = datetime.now(UTC)
    facts = workload(count + 1, seed=8)
    latencies = []
    clock = lambda: last + (datetime.now(UTC) - started)  # noqa: E731
    with (
        stage("single append, inline", None, size=size),
        Memory.open(place, settings=settings, clock=clock) as memory,
    ):
        memory.assert_fact(**facts[0])
        begun = time.perf_counter()
        for fact in facts[1:]:
            t = time.perf_counter()
            memory.assert_fact(**fact)
            latencies.append(time.perf_counter() - t)
        elapsed = time.perf_counter() - begun
    return {
        "facts": count,
        "seconds": elapsed,
        "facts_per_s": count / elapsed,
        **percentiles(latencies),
    }


def _log_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.glob("events.db*"))
