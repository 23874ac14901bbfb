"""Projection and as-of queries: catch-up, rebuild, query latency and the naive fold, in one run.

Run from the repository root:  python bench/project.py [--events 100000] [--queries 2000]
A quick run (10,000 events, nothing written unless --out is given):  python bench/project.py --quick
Writes bench/results/project.json; the README's Performance section quotes it.

The log is written first (by a child process) with inline projection off, so the read
models start empty; then `project()` catches up from zero, `rebuild()` drops and projects
everything again, and the second half of the log is caught up into read models holding the
first. The as-of questions are answered twice: by the read models, and (for a few of them)
by folding the whole log up to the known-at position as `replay.snapshot` does. The two must
give the same facts, or the run exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

import msgspec
from append import machine
from dataclock import data_clock

from apexmem import AddAlias, AssertFact, Command, FactRef, Memory, RecordMessage, RetractFact
from apexmem.domain.settings import MemorySettings, ProjectionSettings, Settings, VectorSettings
from apexmem.replay.snapshot import snapshot

RESULTS = Path(__file__).parent / "results" / "project.json"
_VALID_START = datetime(2010, 1, 1, tzinfo=UTC)
_VALID_DAYS = 6_000
_BATCH = 500
_QUICK = {"events": 10_000, "queries": 300, "naive": 3}
_CATCH_UP_TARGET = 20_000
_AS_OF_P95_TARGET_MS = 10.0


class SimulatedClock:
    """Recorded time that advances one minute per reading, so known-at times spread out."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


class Workload:
    """A seeded stream of commands: people change jobs and homes, use tools, know each other.

    works_at and lives_in are single-valued and move forward in valid time, with one in ten
    arriving with an earlier valid time (a historical version); uses and knows are
    multi-valued; earlier assertions are repeated (reinforced), some versions are retracted,
    names get aliases, and a few messages are recorded.
    """

    def __init__(self, events: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.people = max(100, events // 30)
        self.sizes = {
            "person": self.people,
            "organization": max(10, self.people // 10),
            "tool": max(20, self.people // 5),
            "location": max(10, self.people // 20),
        }
        self.latest: dict[tuple[int, str], datetime] = {}
        self.repeatable: list[AssertFact] = []
        self.retractable: list[tuple[UUID, datetime]] = []
        self.messages = 0
        self.outcomes: Counter[str] = Counter()

    def name(self, entity_type: str, index: int | None = None) -> str:
        """The display name of entity `index` (random when None) of a type."""
        chosen = self.rng.randrange(self.sizes[entity_type]) if index is None else index
        return f"{entity_type}-{chosen:05d}"

    def batch(self, size: int) -> list[Command]:
        """The next `size` commands."""
        return [self._command() for _ in range(size)]

    def learn(self, commands: Sequence[Command], results: Sequence[object]) -> None:
        """Count outcomes; remember created `uses` versions, so later commands can retract them."""
        for command, result in zip(commands, results, strict=True):
            if isinstance(result, FactRef):
                self.outcomes[result.outcome] += 1
            if (
                isinstance(command, AssertFact)
                and command.relation == "uses"
                and isinstance(result, FactRef)
                and result.outcome == "created"
                and command.valid_from is not None
            ):
                self.retractable.append((result.fact_id, command.valid_from))

    def _command(self) -> Command:  # noqa: PLR0911 - a weighted choice reads best as one ladder
        roll = self.rng.random()
        if roll < 0.30:
            return self._single("works_at", "organization")
        if roll < 0.44:
            return self._single("lives_in", "location")
        if roll < 0.64:
            return self._multi("uses", "tool")
        if roll < 0.78:
            return self._multi("knows", "person")
        if roll < 0.90 and self.repeatable:
            return self._reinforce()
        if roll < 0.94 and self.retractable:
            return self._retract()
        if roll < 0.97:
            return self._alias()
        return self._message()

    def _single(self, relation: str, object_type: str) -> AssertFact:
        person = self.rng.randrange(self.people)
        last = self.latest.get((person, relation))
        if last is None:
            valid_from = _VALID_START + timedelta(days=self.rng.randrange(2_000))
        elif self.rng.random() < 0.1 and last > _VALID_START + timedelta(days=1):
            earlier = self.rng.randrange((last - _VALID_START).days)  # arrives out of order
            valid_from = _VALID_START + timedelta(days=earlier)
        else:
            valid_from = last + timedelta(days=self.rng.randrange(30, 500))
        self.latest[(person, relation)] = max(valid_from, last or valid_from)
        return self._fact(self.name("person", person), relation, object_type, valid_from)

    def _multi(self, relation: str, object_type: str) -> AssertFact:
        person = self.rng.randrange(self.people)
        target = self.rng.randrange(self.sizes[object_type])
        if object_type == "person" and target == person:
            target = (person + 1) % self.people
        valid_from = _VALID_START + timedelta(days=self.rng.randrange(_VALID_DAYS))
        fact = self._fact(self.name("person", person), relation, object_type, valid_from, target)
        self.repeatable.append(fact)
        return fact

    def _fact(
        self,
        subject: str,
        relation: str,
        object_type: str,
        valid_from: datetime,
        target: int | None = None,
    ) -> AssertFact:
        target_name = self.name(object_type, target)
        return AssertFact(
            subject=subject,
            subject_type="person",
            relation=relation,
            object=target_name,
            object_type=object_type,
            fact=f"{subject} {relation.replace('_', ' ')} {target_name}",
            confidence=round(self.rng.uniform(0.5, 1.0), 3),
            valid_from=valid_from,
            episode=f"conv-{self.rng.randrange(self.people)}",
            actor="bench",
        )

    def _reinforce(self) -> AssertFact:
        again = self.repeatable[self.rng.randrange(len(self.repeatable))]
        return AssertFact(
            **{f: getattr(again, f) for f in again.__struct_fields__ if f != "confidence"},
            confidence=round(self.rng.uniform(0.5, 1.0), 3),
        )

    def _retract(self) -> RetractFact:
        index = self.rng.randrange(len(self.retractable))
        fact_id, valid_from = self.retractable[index]
        self.retractable[index] = self.retractable[-1]
        self.retractable.pop()
        if self.rng.random() < 0.5:
            return RetractFact(fact_id=fact_id, reason="withdrawn", actor="bench")
        until = valid_from + timedelta(days=self.rng.randrange(30, 900))
        return RetractFact(fact_id=fact_id, valid_until=until, reason="ended", actor="bench")

    def _alias(self) -> AddAlias:
        entity_type = self.rng.choice(("person", "organization", "tool"))
        nick = f"{entity_type[:3]}-nick-{self.rng.randrange(self.sizes[entity_type] * 2)}"
        return AddAlias(entity=self.name(entity_type), entity_type=entity_type, alias=nick)

    def _message(self) -> RecordMessage:
        self.messages += 1
        text = f"{self.name('person')} mentioned {self.name('tool')} again."
        return RecordMessage(episode=f"conv-{self.messages // 20}", speaker="user", text=text)


def write_log(directory: Path, events: int, seed: int) -> dict[str, Any]:
    """Append about `events` events through the facade, read models left empty."""
    settings = _graph_only()
    workload = Workload(events, seed)
    commands = 0
    with Memory.open(directory, settings=settings, clock=SimulatedClock()) as memory:
        while (written := memory.log.last_position()) < events:
            left = events - written
            batch = workload.batch(_BATCH if left > 2 * _BATCH else max(1, left * 3 // 4))
            workload.learn(batch, memory.execute(batch))
            commands += len(batch)
        tags = Counter(e.tag for e in memory.events())
    return {
        "events": sum(tags.values()),
        "commands": commands,
        "by_tag": dict(sorted(tags.items())),
        "assertion_outcomes": dict(sorted(workload.outcomes.items())),
    }


def timed(run: Callable[[], Any]) -> tuple[Any, float]:
    """`run()`'s result and its wall time in seconds."""
    started = time.perf_counter()
    result = run()
    return result, time.perf_counter() - started


def percentiles(latencies: list[float]) -> dict[str, float]:
    """p50, p95 and p99 in milliseconds."""
    cuts = statistics.quantiles(latencies, n=100)
    return {"p50_ms": cuts[49] * 1e3, "p95_ms": cuts[94] * 1e3, "p99_ms": cuts[98] * 1e3}


def projection(memory: Memory) -> dict[str, Any]:
    """Catch-up into empty read models, a full rebuild, and a catch-up of the log's second
    half into read models that hold the first (indexes kept up to date row by row)."""
    caught, catch_secs = timed(memory.project)
    rebuilt, rebuild_secs = timed(memory.rebuild)
    memory.projections.drop()
    memory.projections.graph.catch_up(until=memory.log.last_position() // 2)
    rest, rest_secs = timed(memory.project)
    return {
        "catch_up": {
            "events": caught.events,
            "batches": caught.batches,
            "batch_size": memory.settings.memory.projection.batch_size,
            "seconds": catch_secs,
            "events_per_s": caught.events / catch_secs,
        },
        "rebuild": {
            "events": rebuilt.events,
            "seconds": rebuild_secs,
            "events_per_s": rebuilt.events / rebuild_secs,
        },
        "catch_up_second_half": {
            "events": rest.events,
            "seconds": rest_secs,
            "events_per_s": rest.events / rest_secs,
        },
        "graph": msgspec.structs.asdict(memory.stats().graph),
    }


Question = tuple[str, datetime, datetime]
"""An as-of question: (entity name, known at S, valid at T)."""


def questions(memory: Memory, count: int, seed: int) -> list[Question]:
    """Random names (people mostly), known-at times over the log's span, valid times."""
    rng = random.Random(seed)
    first = next(memory.events()).recorded_at
    span = (next(memory.events(start=memory.log.last_position())).recorded_at - first) / 1_000
    names = _names(memory)
    people = [n for n in names if n.startswith("person-")]
    others = [n for n in names if not n.startswith("person-")]
    asked = []
    for _ in range(count):
        name = rng.choice(people if rng.random() < 0.7 else others)
        known_at = first + span * rng.randrange(1_001)
        valid_at = _VALID_START + timedelta(days=rng.randrange(_VALID_DAYS + 900))
        asked.append((name, known_at, valid_at))
    return asked


def _names(memory: Memory) -> list[str]:
    return sorted(
        {e.data.name for e in memory.events(tags=["entity-observed.v1"]) if e.version == 1}
    )


def as_of_latency(memory: Memory, asked: list[Question]) -> dict[str, Any]:
    """`as_of(known_at=S).facts_about(name, valid_at=T)` for every question, timed each."""
    for name, known_at, valid_at in asked[:50]:  # warm caches and SQLAlchemy's statement cache
        memory.as_of(known_at=known_at).facts_about(name, valid_at=valid_at)
    latencies, sizes = [], []
    for name, known_at, valid_at in asked:
        started = time.perf_counter()
        found = memory.as_of(known_at=known_at).facts_about(name, valid_at=valid_at)
        latencies.append(time.perf_counter() - started)
        sizes.append(len(found))
    return {
        "queries": len(asked),
        **percentiles(latencies),
        "mean_facts_per_answer": statistics.fmean(sizes),
        "empty_answers": sum(1 for s in sizes if s == 0) / len(sizes),
    }


def current_latency(memory: Memory, asked: list[Question]) -> dict[str, Any]:
    """`facts_about(name)` (what the store believes now, open-ended facts) per name."""
    latencies = []
    for name, _, _ in asked:
        started = time.perf_counter()
        memory.facts_about(name)
        latencies.append(time.perf_counter() - started)
    return {"queries": len(asked), **percentiles(latencies)}


def naive_answer(memory: Memory, question: Question) -> set[UUID]:
    """Decode and fold the whole log up to S, then keep the entity's facts valid at T."""
    name, known_at, valid_at = question
    folded = snapshot(memory.log, until=memory.log.position_at(known_at))
    ids = {entity for entity, display in folded.names.items() if display == name}
    return {
        f.fact_id
        for f in folded.facts
        if f.standing == "believed"
        and (f.subject_id in ids or f.object_id in ids)
        and f.valid_from <= valid_at
        and (f.valid_until is None or f.valid_until > valid_at)
    }


def naive(memory: Memory, asked: list[Question], read_model_p50_ms: float) -> dict[str, Any]:
    """The full-log fold for a few questions: its latency, and whether it agrees."""
    latencies, mismatches = [], []
    for question in asked:
        expected, seconds = timed(partial(naive_answer, memory, question))
        latencies.append(seconds)
        name, known_at, valid_at = question
        view = memory.as_of(known_at=known_at)
        got = {f.fact_id for f in view.facts_about(name, valid_at=valid_at)}
        if got != expected:
            mismatches.append({"question": [name, str(known_at), str(valid_at)]})
    p50 = statistics.median(latencies) * 1e3
    return {
        "samples": len(asked),
        "p50_ms": p50,
        "ratio_to_read_model_p50": p50 / read_model_p50_ms,
        "answers_equal": not mismatches,
        "mismatches": mismatches,
    }


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Every measurement on one memory in `root`.

    The log is written by a child process, as an agent's process and `apexmem project`
    would share the work: the writer's caches and garbage (about 300,000 objects) would
    otherwise make each full garbage collection during the catch-up three times as long.
    """
    with ProcessPoolExecutor(max_workers=1) as writer:
        workload = writer.submit(write_log, root / "memory", args.events, 11).result()
    directory = root / "memory"
    with Memory.open(directory, settings=_not_inline(), clock=data_clock(directory)) as memory:
        result: dict[str, Any] = {"workload": workload, **projection(memory)}
        asked = questions(memory, args.queries, seed=12)
        result["as_of"] = as_of_latency(memory, asked)
        result["current"] = current_latency(memory, asked[: min(len(asked), 1_000)])
        result["naive"] = naive(memory, asked[: args.naive], result["as_of"]["p50_ms"])
    return result


def targets(measured: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target, the figure it is checked against, and whether it was met."""
    rate, p95 = measured["catch_up"]["events_per_s"], measured["as_of"]["p95_ms"]
    return {
        "catch_up_events_per_s": {"target": _CATCH_UP_TARGET, "met": rate >= _CATCH_UP_TARGET},
        "as_of_p95_ms": {"target": _AS_OF_P95_TARGET_MS, "met": p95 <= _AS_OF_P95_TARGET_MS},
    }


def _not_inline() -> Settings:
    return _graph_only()


def _graph_only() -> Settings:
    """Inline projection off, and no vectors: this run times the graph projection alone
    (bench/vectors.py times the vectors projection)."""
    return Settings(
        memory=MemorySettings(
            projection=ProjectionSettings(inline=False), vectors=VectorSettings(enabled=False)
        )
    )


def main(argv: list[str] | None = None) -> int:
    """Run the measurements, write the results file, exit 1 if the naive answers differ."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000, help="events written first")
    parser.add_argument("--queries", type=int, default=2_000, help="as-of questions asked")
    parser.add_argument("--naive", type=int, default=5, help="questions answered by a full fold")
    parser.add_argument("--quick", action="store_true", help="10,000 events, 300 queries")
    parser.add_argument("--out", type=Path, default=None, help=f"default: {RESULTS}")
    args = parser.parse_args(argv)
    if args.quick:
        vars(args).update(_QUICK)
    with tempfile.TemporaryDirectory(prefix="apexmem-bench-") as work:
        measured = run(args, Path(work))
    result = {
        "machine": machine(),
        "command": " ".join(["python", "bench/project.py", *(argv or sys.argv[1:])]),
        **measured,
        "targets": targets(measured),
    }
    out = args.out or (None if args.quick else RESULTS)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    json.dump(result, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
    return 0 if measured["naive"]["answers_equal"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
