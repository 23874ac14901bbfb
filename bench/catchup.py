"""The projection stage: catch-up from an empty read model without and with embeddings, the
FAISS index, a full rebuild, and the bytes on disk, in one process (as `apexmem project`).

The graph projection (entities, facts on both time axes, full text) catches up first,
timed alone: that is the catch-up without embeddings. The vectors projection (WordLlama,
every distinct text embedded once) follows, with the FAISS index following it in a thread
(`Projections.catch_up_vectors`: FAISS adds on the core the embedder leaves idle); the
vectors figure runs to the last embedded batch, the FAISS figure is the index's tail after
it (what it had not yet taken in), and the three add up to the stage's wall time: the
catch-up with embeddings. The rebuild drops both read models and projects
the log again (the embedding cache in the read model is kept, so nothing is re-embedded).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

import msgspec
from append import LOG_ONLY
from progress import Advance, finished_stages, peak_rss_bytes, stage

from apexmem import Memory, Settings
from apexmem.replay.runner import CatchUp, Progress

__all__ = ["disk_bytes", "graph_catch_up", "main", "project"]


def project(directory: Path | str, settings: Settings, size: int) -> dict[str, Any]:
    """Project the log in `directory` (or at a PostgreSQL URL) from zero, build the index,
    rebuild; timings and sizes."""
    with Memory.open(directory, settings=settings) as memory:
        similarity = memory.similarity
        assert similarity is not None, "the suite projects with vectors enabled"
        target = memory.log.last_position()
        graph, graph_s = _staged("project: graph", target, size, memory.projections.graph.catch_up)
        marks: list[float] = [0.0, 0.0]  # the last embedded batch, the index's end

        def indexed(progress: Progress) -> CatchUp:
            def reached(position: int, target: int) -> None:
                marks[0] = time.perf_counter()
                progress(position, target)

            done = memory.projections.catch_up_vectors(progress=reached)
            marks[1] = time.perf_counter()
            return done

        vectors, both_s = _staged("project: vectors + FAISS index", target, size, indexed)
        faiss_s = marks[1] - marks[0] if marks[0] else both_s  # the index's tail
        vectors_s = both_s - faiss_s
        stats = memory.stats()
        after_catch_up = peak_rss_bytes()
        rebuilt, rebuild_s = _staged("rebuild (graph + vectors)", target, size, memory.rebuild)
        with stage("rebuild: FAISS index", None, size=size):
            started = time.perf_counter()
            similarity.index.sync()
            rebuild_s += time.perf_counter() - started
    with_embeddings = graph_s + vectors_s + faiss_s
    return {
        "events": target,
        "graph": _rate(graph, graph_s),
        "vectors": _rate(vectors, vectors_s),
        "faiss_index_s": faiss_s,
        "faiss_index_beside_vectors": True,
        "with_embeddings": {"seconds": with_embeddings, "events_per_s": target / with_embeddings},
        "rebuild": _rate(rebuilt, rebuild_s),
        "graph_counts": msgspec.to_builtins(stats.graph),
        "peak_rss_bytes_catch_up": after_catch_up,
        "peak_rss_bytes": peak_rss_bytes(),
        "stages": finished_stages(),
    }


def _staged(
    label: str, target: int, size: int, run: Callable[..., CatchUp]
) -> tuple[CatchUp, float]:
    with stage(label, target, size=size) as advance:
        started = time.perf_counter()
        done = run(progress=_reached(advance))
        return done, time.perf_counter() - started


def _reached(advance: Advance) -> Callable[[int, int], None]:
    return lambda position, _target: advance(position)


def _rate(done: CatchUp, seconds: float) -> dict[str, Any]:
    return {"events": done.events, "seconds": seconds, "events_per_s": done.events / seconds}


def disk_bytes(directory: Path) -> dict[str, int]:
    """Bytes on disk of the log (events.db and its WAL) and of the read models (readmodels.db,
    its WAL, the FAISS index file), apart."""
    files = [p for p in directory.iterdir() if p.is_file()]
    log = sum(p.stat().st_size for p in files if p.name.startswith("events.db"))
    return {"log": log, "readmodels": sum(p.stat().st_size for p in files) - log}


def graph_catch_up(log: Path, runs: int, cpu: list[float] | None = None) -> list[float]:
    """Seconds of each of `runs` graph catch-ups (vectors off) from empty read models, each
    into a fresh folder holding a copy of the log at `log` (its events.db); the process's
    CPU seconds of each are appended to `cpu` when given (on a loaded machine the wall
    time is mostly waiting for a core, the CPU time much less so)."""
    settings = msgspec.convert(
        {"memory": {"projection": {"inline": False}, "vectors": {"enabled": False}}}, Settings
    )
    seconds = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(dir=log.parent) as scratch:
            shutil.copy(log / "events.db", Path(scratch) / "events.db")
            with Memory.open(scratch, settings=settings) as memory:
                started, used = time.perf_counter(), time.process_time()
                done = memory.projections.graph.catch_up()
                seconds.append(time.perf_counter() - started)
                if cpu is not None:
                    cpu.append(time.process_time() - used)
                if done.position != memory.log.last_position():
                    raise SystemExit(f"the catch-up stopped at {done.position}, short of the log")
    return seconds


def main(argv: list[str] | None = None) -> int:
    """Time the graph catch-up alone on the suite's workload (a log written once, kept)."""
    parser = argparse.ArgumentParser(
        description="Graph catch-up (no embeddings) from empty read models, alone. "
        "Example: python bench/catchup.py --facts 100000 --runs 3 --work /tmp/catchup"
    )
    parser.add_argument("--facts", type=int, default=10_000, help="fact assertions in the log")
    parser.add_argument("--runs", type=int, default=3, help="catch-ups timed")
    parser.add_argument("--work", type=Path, required=True, help="where the log is kept")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    log = args.work / f"log-{args.facts}-{args.seed}"
    if not (log / "events.db").exists():
        write_log(log, args.facts, args.seed)
    with Memory.open(log, settings=LOG_ONLY) as memory:
        events = memory.log.last_position()
    cpu: list[float] = []
    seconds = graph_catch_up(log, args.runs, cpu)
    rates = [events / s for s in seconds]
    figures = {
        "events": events,
        "seconds": seconds,
        "median_events_per_s": median(rates),
        "cpu_seconds": cpu,
        "median_events_per_cpu_s": median(events / s for s in cpu),
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(figures))
    return 0


def write_log(directory: Path, facts: int, seed: int) -> None:
    """The suite's workload of `facts` assertions, appended with projection off."""
    # Imported here: the writer's module imports places, which imports this one.
    from ingest import _append
    from workload import Workload

    directory.mkdir(parents=True, exist_ok=True)
    _append(str(directory), Workload(facts, seed, batch=1_000, single=min(2_000, facts // 10)))


if __name__ == "__main__":
    raise SystemExit(main())
