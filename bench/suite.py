"""The benchmark suite: every measurement at each size, checked against the ground truth.

Run from the repository root:  python -m bench --sizes 10000,100000,1000000
A smoke run (300 facts, the hashing embedder, a few seconds):  python -m bench --smoke
Writes bench/results/<date>-<size>.json and .md per size and bench/results/summary.md
(the newest run of every size); exits 1 when a correctness check is below 100%.

With `--backend postgresql://user@host/db` each size then runs again with the memory in a
fresh schema of that database (dropped after unless --keep), followed by batched append
with 1, 2 and 4 writer processes and recall with 1, 2 and 4 reader processes on both
backends (bench/concurrency.py); bench/results/postgresql/<date>-<size>.json and .md hold
the PostgreSQL run with every figure beside SQLite's of the same invocation (bench/beside.py).

Each size runs in four processes, one after another, as apexmem is deployed: a writer
(the workload appended batched, then one fact per append, with inline projection off;
the raw SQLite ceiling), a projector (the graph, then the vectors, then the FAISS index,
then a full rebuild), a reader (recall, vector search, then the ground truth is generated
again and the read model checked against it, with the as-of latencies measured on the same
questions), and last an agent's process writing one fact per append into the memory of
that size with the default inline projection (`--inline` facts; each call returns once the
fact is in the graph, full text, vectors and FAISS index). The peak RSS of each of the
first three is reported; the reader's is taken before it builds the ground truth, which is
the bench's own data, not apexmem's.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final, TypeVar

import msgspec
from beside import backend_machine, beside_markdown, issue_targets, side_by_side, write_beside
from catchup import project
from checks import AXES, as_of, current_versions, naive_baseline
from dataclock import data_clock
from ingest import ingest, inline_writes
from places import (
    Place,
    directory_place,
    drop,
    place_bytes,
    postgres_place,
    vacuum_catalogs,
)
from progress import finished_stages, load_average, peak_rss_bytes, rss_bytes, stage
from recall import World, machine, questions, recaller, timed, vector_search
from report import summarize, targets, write_results
from workload import Workload

from apexmem import Memory, Settings
from apexmem.domain.settings import MemorySettings, ProjectionSettings, VectorSettings

__all__ = ["main"]

RESULTS: Final = Path(__file__).parent / "results"
_PROBE_KINDS: Final = {"person", "organization", "tool", "project", "location", "event"}
_RECALL_MODES: Final = {
    "bfs": ("bfs", False),
    "activation": ("activation", False),
    "bfs_as_of": ("bfs", True),
    "activation_as_of": ("activation", True),
}
_SMOKE: Final = {
    "sizes": "300", "probes": 200, "queries": 20, "exact_queries": 5, "naive": 2,
    "single": 30, "inline": 20, "batch": 50, "embedder": "hashing",
}  # fmt: skip
R = TypeVar("R")


def settings_for(embedder: str, *, inline: bool) -> Settings:
    """The default settings but for the embedder and whether writes project inline."""
    return Settings(
        memory=MemorySettings(
            projection=ProjectionSettings(inline=inline),
            vectors=VectorSettings(embedder="hashing" if embedder == "hashing" else "wordllama"),
        )
    )


def _workload(size: int, args: argparse.Namespace) -> Workload:
    single = min(args.single, size // 10)
    return Workload(size, args.seed, batch=args.batch, single=single)


def write(
    directory: Path, size: int, args: argparse.Namespace, place: Place | None = None
) -> dict[str, Any]:
    """The writer process: the workload into `place` (default `directory`/memory), and the
    append runs."""
    return ingest(directory, _workload(size, args), place=place)


def read(memory_place: Path | str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    """The reader process: recall and vector search, then correctness and as-of latency."""
    settings = settings_for(args.embedder, inline=True)
    clock = data_clock(memory_place)
    with Memory.open(memory_place, settings=settings, clock=clock) as memory:
        asked = questions(World(size, args.seed), memory, args.queries, args.seed + 2)
        recall = {}
        for label, (mode, past) in _RECALL_MODES.items():
            with stage(f"recall: {label}", None, size=size):
                recall[label] = timed(memory, recaller(memory, mode, past), asked)
        with stage("vector search", None, size=size):
            vectors = vector_search(memory, asked, _exact_queries(size, args))
        rss, before_truth = peak_rss_bytes(), rss_bytes()
        workload = _workload(size, args)
        with stage("ground truth", None, size=size):
            for _ in workload.appends():
                pass
        truth = workload.truth
        truth_bytes = rss_bytes() - before_truth
        probes = truth.probes(args.probes, args.seed + 3, workload.last_append, _PROBE_KINDS)
        checked = {axes: as_of(memory, truth, probes, axes, size) for axes in AXES}
        result = {
            "recall": recall,
            "vectors": vectors,
            "current_versions": current_versions(memory, truth, size),
            "as_of": checked,
            "peak_rss_bytes": rss,
            "peak_rss_bytes_with_truth": peak_rss_bytes(),
            "ground_truth_rss_bytes": truth_bytes,
        }
        if size <= args.naive_max_size and args.naive > 0:
            p50 = checked["valid_at+known_at"]["p50_ms"]
            result["naive"] = naive_baseline(memory, truth, probes[: args.naive], p50, size)
    result["stages"] = finished_stages()
    return result


def _exact_queries(size: int, args: argparse.Namespace) -> int:
    """At most `--exact-queries` full scans, fewer past 100,000 facts (one takes ~2.5 s per
    100,000 vectors; the comparison scans each question twice)."""
    return max(3, min(int(args.exact_queries), 2_000_000 // size))


def _in_child(run: Callable[..., R], *arguments: Any) -> R:
    """`run(*arguments)` in a fresh process (spawned: its peak RSS is its own)."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as child:
        return child.submit(run, *arguments).result()


def run_size(
    size: int, args: argparse.Namespace, work: Path, place: Place | None = None
) -> dict[str, Any]:
    """Every measurement at one size, the memory in `place` (default a directory in `work`);
    the result as written to the results file."""
    directory = work / f"size-{size}"
    directory.mkdir(parents=True, exist_ok=True)
    at = place if place is not None else directory_place(directory / "memory")
    load_before = load_average()
    started = datetime.now(UTC)
    written = _in_child(write, directory, size, args, place)
    projector = settings_for(args.embedder, inline=False)
    projection = _in_child(project, at.memory, projector, size)
    disk = place_bytes(at)
    queried = _in_child(read, at.memory, size, args)
    inline = settings_for(args.embedder, inline=True)
    written_inline = _in_child(inline_writes, at.memory, args.inline, inline, size)
    result = {
        "size": size,
        **({} if place is None else {"backend": place.backend, "schema": place.schema}),
        "started": started.isoformat(),
        "seconds": (datetime.now(UTC) - started).total_seconds(),
        "load_average": {"before": load_before, "after": load_average()},
        "append": written,
        "projection": projection,
        "single_inline": written_inline,
        **queried,
        "disk": {
            **disk,
            "log_bytes_per_fact": disk["log"] / size,
            "readmodel_bytes_per_fact": disk["readmodels"] / size,
        },
    }
    result["targets"] = targets(result)
    result["correct"] = _correct(result)
    return result


def _on_postgres(
    size: int, args: argparse.Namespace, work: Path, sqlite: dict[str, Any], machine: dict[str, Any]
) -> dict[str, Any]:
    """The run at `size` on PostgreSQL, then the writer and reader runs on both backends;
    written beside SQLite's run `sqlite`."""
    place = postgres_place(args.backend, f"suite{size}")
    vacuum_catalogs(place)
    try:
        run = run_size(size, args, work, place)
        run["concurrency"] = side_by_side(
            args, size, directory_place(work / f"size-{size}" / "memory"), place,
            settings_for(args.embedder, inline=True),
        )  # fmt: skip
    finally:
        if not args.keep:
            drop(place)
    run["issue_25_targets"] = issue_targets(sqlite, run)
    on = backend_machine(machine, args.backend)
    text = beside_markdown(on, sqlite, run)
    print(text)
    if args.out is not None:
        write_beside(args.out / "postgresql", on, run, text)
    return run


def _correct(result: dict[str, Any]) -> bool:
    checks = [result["current_versions"]["share"], *(a["share"] for a in result["as_of"].values())]
    naive = result.get("naive")
    return all(share == 1.0 for share in checks) and (naive is None or naive["answers_equal"])


def _machine(args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    packages = ("eventsourcing", "blake3", "rich")
    return {
        **machine(),
        **{name: version(name) for name in packages},
        "command": " ".join(["python -m bench", *argv]),
        "embedder": args.embedder,
        "settings": msgspec.to_builtins(Settings().memory),
    }


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--sizes", default="10000,100000", help="fact assertions per size, comma-separated")
    add("--smoke", action="store_true", help="one size of 300 facts, hashing embedder, seconds")
    add("--probes", type=int, default=1_000, help="as-of questions checked and timed per size")
    add("--queries", type=int, default=300, help="recall questions per mode")
    add("--exact-queries", type=int, default=20, help="questions also answered by a full scan")
    add("--naive", type=int, default=5, help="questions answered by a full replay too")
    add("--naive-max-size", type=int, default=100_000, help="largest size with the replay")
    add("--single", type=int, default=5_000, help="facts appended one per append (at most 10%%)")
    add("--inline", type=int, default=1_000, help="single appends with inline projection")
    add("--batch", type=int, default=1_000, help="items per batched append")
    add("--embedder", choices=("wordllama", "hashing"), default="wordllama")
    add("--seed", type=int, default=7)
    add(
        "--out",
        type=Path,
        default=None,
        help=f"results folder (default {RESULTS}, none on --smoke)",
    )
    add("--work", type=Path, default=None, help="keep the memories in this folder")
    add("--backend", default=None, help="a PostgreSQL URL: run each size there too, beside SQLite")
    add("--keep", action="store_true", help="keep the PostgreSQL schemas (default: dropped)")
    add("--writers", default="1,2,4", help="writer processes of the append runs (--backend)")
    add("--readers", default="1,2,4", help="reader processes of the recall runs (--backend)")
    add(
        "--writer-facts",
        type=int,
        default=20_000,
        help="facts of each append run with many writers (at most the size)",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(_SMOKE)
    elif args.out is None:
        args.out = RESULTS
    return args


def main(argv: list[str] | None = None) -> int:
    """Run every size, print the table, write the results; 1 when a check is below 100%."""
    given = sys.argv[1:] if argv is None else argv
    args = _arguments(given)
    sizes = [int(s) for s in args.sizes.split(",")]
    measured_on = _machine(args, given)  # before the runs: the code measured is the code now
    runs = []
    with tempfile.TemporaryDirectory(prefix="apexmem-bench-") as scratch:
        work = args.work or Path(scratch)
        if args.backend is not None:  # the PostgreSQL memories' FAISS files: with the rest
            os.environ["APEXMEM_CACHE"] = str(work / "cache")
        for size in sizes:
            run = run_size(size, args, work)
            runs.append(run)
            if args.out is not None:
                write_results(args.out, measured_on, run)
            if args.backend is not None:
                runs.append(_on_postgres(size, args, work, run, measured_on))
    print(summarize(measured_on, [r for r in runs if "backend" not in r]))
    failed = [f"{r['size']} ({r.get('backend', 'sqlite')})" for r in runs if not r["correct"]]
    if failed:
        print(f"correctness below 100% at {failed}: see the results' wrong_examples")
        return 1
    return 0
