"""Many processes at once on one backend: batched append with N writers, recall with N readers.

Writers (bench/pg_append.py's `run`): bench/append.py's facts through the facade in atomic
batches of 1,000, inline projection off, shared among N processes that each assert about
entities of their own, released together; the aggregate rate is every event over the wall
time from the first start to the last end. Then the same for the log alone: batches of
1,000 ready-made events appended straight to the log (encoding, chain, lock, commit).
Each writer count gets a fresh memory: a directory for SQLite (its writers take turns for
the one write lock), a schema for PostgreSQL.

Readers: N processes open the suite's projected memory at the size, each builds its own
`--queries` questions (another seed per reader), warms up with one recall, waits for the
others, then asks each once, BFS recall as the suite's reader does (usage events appended as
an agent's recalls would). p50/p95 are over every recall of every reader; the rate is all
recalls over the wall time.
"""

from __future__ import annotations

import multiprocessing
import tempfile
import time
from collections.abc import Sequence
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any, NamedTuple

from append import LOG_ONLY
from dataclock import data_clock
from pg_append import run as run_writers
from places import Place, directory_place, drop, postgres_place
from progress import stage
from recall import World, percentiles, questions, recaller

from apexmem import Memory, Settings
from apexmem.config import EVENTS_FILE

__all__ = ["readers", "writers"]


def writers(
    backend: str, counts: Sequence[int], facts: int, *, size: int, keep: bool, alone: bool
) -> list[dict[str, Any]]:
    """Batched append with each count of writer processes on `backend` (`sqlite` or a
    PostgreSQL URL), `facts` facts in all (with `alone`, `facts` ready-made events straight
    to the log); one result per count."""
    results = []
    with tempfile.TemporaryDirectory(prefix="apexmem-writers-") as scratch:
        for count in counts:
            if backend == "sqlite":
                place = directory_place(Path(scratch) / f"writers-{count}-{alone}")
            else:
                place = postgres_place(backend, f"writers{count}")
            try:
                # Made before the writers start, which then open an existing memory (four
                # processes creating one SQLite memory at once can meet a locked database).
                Memory.open(place.memory, settings=LOG_ONLY).close()
                target = place.memory
                if alone and place.url is None:  # the log worker opens the log file itself
                    target = str(Path(place.memory) / EVENTS_FILE)
                label = f"{place.backend}: {count} writer(s)" + (", log alone" if alone else "")
                with stage(label, None, size=size):
                    found = run_writers(target, count, facts, Path(scratch), alone=alone)
                results.append(found)
            finally:
                if not keep:
                    drop(place)
    return results


def readers(
    place: Place, counts: Sequence[int], settings: Settings, *, size: int, seed: int, queries: int
) -> list[dict[str, Any]]:
    """BFS recall with each count of reader processes on the memory at `place`."""
    context = multiprocessing.get_context("spawn")
    results = []
    for count in counts:
        barrier, found = context.Barrier(count), context.Queue()
        processes = [
            context.Process(
                target=_reader,
                args=(_Job(place.memory, settings, size, seed, index, queries), barrier, found),
            )
            for index in range(count)
        ]
        with stage(f"{place.backend}: {count} reader(s)", None, size=size):
            for process in processes:
                process.start()
            answers = [found.get() for _ in processes]
            for process in processes:
                process.join()
                if process.exitcode != 0:
                    raise SystemExit(f"a reader failed (exit {process.exitcode})")
        latencies = [t for answer in answers for t in answer["latencies"]]
        wall = max(a["end"] for a in answers) - min(a["start"] for a in answers)
        results.append(
            {
                "readers": count,
                "recalls": len(latencies),
                **percentiles(latencies),
                "recalls_per_s": len(latencies) / wall,
                "seconds": wall,
            }
        )
    return results


class _Job(NamedTuple):
    """What reader number `reader` asks: `queries` questions of its own about the memory at `place`
    (`size` facts, the world of `seed`)."""

    place: str
    settings: Settings
    size: int
    seed: int
    reader: int
    queries: int


def _reader(job: _Job, barrier: Barrier, found: Queue[dict[str, Any]]) -> None:
    """One reader process: questions of its own, then each asked once after the barrier."""
    clock = data_clock(job.place)
    with Memory.open(job.place, settings=job.settings, clock=clock) as memory:
        world = World(job.size, job.seed)
        asked = questions(world, memory, job.queries, job.seed + 2 + job.reader)
        call = recaller(memory, "bfs", False)
        call(asked[0])
        barrier.wait()
        latencies = []
        start = time.time()
        for question in asked:
            started = time.perf_counter()
            call(question)
            latencies.append(time.perf_counter() - started)
        end = time.time()
    found.put({"latencies": latencies, "start": start, "end": end})
