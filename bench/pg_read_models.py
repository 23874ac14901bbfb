"""Recall and full-text search latency on PostgreSQL beside SQLite, for the same memory.

The workload of bench/recall.py (`--size` fact assertions, one seed) is written into a
directory (SQLite) and into a fresh schema of `--url` (PostgreSQL), each projected from zero;
then the same questions are asked of both: recall (spreading activation, and BFS, each
also inside the question's past state), search_facts, search_entities, and as-of
facts_about of the entity a question names in three forms (valid_at + known_at, valid_at,
known_at); one process, the first call excluded. Recall records no usage, so both memories
stay as built and their answers are compared: every recall's hits (ids, in order) and every
as-of answer must be the same on both backends. The schema is dropped at the end.

`--keep DIR` keeps both memories between runs (the SQLite directory in DIR, the schema named
in DIR/schema) and reuses them when they are there, so queries can be measured again without
building anything; `--drop DIR` drops the schema and the directory.

    python bench/pg_read_models.py --url postgresql://postgres@127.0.0.1/postgres --size 10000
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

import psycopg
from recall import (
    Question,
    World,
    _embedder,
    _latencies,
    percentiles,
    project,
    questions,
    write_log,
)

from apexmem import Memory
from apexmem.domain.settings import (
    MemorySettings,
    ProjectionSettings,
    RecallSettings,
    Settings,
)

PARTS = (
    "recall_activation",
    "recall_bfs",
    "recall_activation_as_of",
    "recall_bfs_as_of",
    "as_of_both",
    "as_of_valid",
    "as_of_known",
    "search_facts",
    "search_entities",
)
_RECALLS = {
    "recall_activation": ("activation", False),
    "recall_bfs": ("bfs", False),
    "recall_activation_as_of": ("activation", True),
    "recall_bfs_as_of": ("bfs", True),
}
_AS_OF = {"as_of_both": (True, True), "as_of_valid": (True, False), "as_of_known": (False, True)}


def build(location: str, size: int, seed: int, embedder: str) -> dict[str, Any]:
    """Write and project the workload at `location`; the figures."""
    written = write_log(location, size, seed, embedder)  # type: ignore[arg-type]
    return {"write": written, "project": project(location, embedder)}  # type: ignore[arg-type]


def ask(
    location: str, args: argparse.Namespace, parts: Sequence[str]
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Ask the questions of `parts` at `location`: the figures, and the answers."""
    settings = Settings(
        memory=MemorySettings(
            projection=ProjectionSettings(inline=False),
            recall=RecallSettings(record_usage=False),
        )
    )
    figures: dict[str, Any] = {}
    answers: dict[str, list[Any]] = {}
    with Memory.open(location, settings=settings, embedder=_embedder(args.embedder)) as memory:
        asked = questions(World(args.size, args.seed), memory, args.queries, args.seed + 2)
        texts = [q.text for q in asked]
        view = memory.as_of()
        for part in parts:
            if part in _RECALLS:
                figures[part], answers[part] = _recalls(memory, _RECALLS[part], asked)
            elif part in _AS_OF:
                figures[part], answers[part] = _as_of(memory, _AS_OF[part], asked)
            elif part == "search_facts":
                figures[part] = _latencies(lambda t: view.search_facts(t, limit=10), texts)
            elif part == "search_entities":
                figures[part] = _latencies(lambda t: view.search_entities(t, limit=10), texts)
    return figures, answers


def _timed(call: Callable[[Any], Any], items: Sequence[Any]) -> tuple[dict[str, Any], list[Any]]:
    """Each item asked once after one call to warm up: percentiles and the answers."""
    call(items[0])
    gc.collect()
    load = os.getloadavg()[0]
    latencies, answers = [], []
    for item in items:
        started = time.perf_counter()
        answers.append(call(item))
        latencies.append(time.perf_counter() - started)
    figures = {"queries": len(items), **percentiles(latencies)}
    return {**figures, "load_average": [load, os.getloadavg()[0]]}, answers


def _recalls(
    memory: Memory, form: tuple[str, bool], asked: Sequence[Question]
) -> tuple[dict[str, Any], list[Any]]:
    mode, as_of = form

    def call(q: Question) -> list[str]:
        """The hits' ids in order (a recall cut short by its time budget says so)."""
        hits = memory.recall(
            q.text,
            limit=10,
            max_hops=2,
            mode=mode,
            valid_at=q.valid_at if as_of else None,
            known_at=q.known_at if as_of else None,
        )
        return [*(["cut short"] if hits.cut_short else []), *(h.item_id.hex for h in hits)]

    return _timed(call, asked)


def _as_of(
    memory: Memory, form: tuple[bool, bool], asked: Sequence[Question]
) -> tuple[dict[str, Any], list[Any]]:
    valid, known = form
    named = [q for q in asked if q.names is not None]

    def call(q: Question) -> list[str]:
        view = memory.as_of(known_at=q.known_at) if known else memory
        rows = view.facts_about(q.names or "", valid_at=q.valid_at if valid else None)
        return sorted(f"{r.fact_id} {r.subject} {r.relation} {r.object}" for r in rows)

    return _timed(call, named)


def _kept(url: str, keep: Path | None) -> tuple[str, Path]:
    """The schema and the SQLite directory: kept in `keep` (named in keep/schema) or new."""
    if keep is None:
        return f"bench_{uuid4().hex[:12]}", Path(tempfile.mkdtemp()) / "mem"
    keep.mkdir(parents=True, exist_ok=True)
    named = keep / "schema"
    if not named.exists():
        named.write_text(f"bench_{uuid4().hex[:12]}")
    return named.read_text().strip(), keep / "mem"


def _drop(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def main(argv: list[str] | None = None) -> int:
    """Run both backends and print a table (and the JSON with --out)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a PostgreSQL database to make a schema in")
    parser.add_argument("--size", type=int, default=10_000, help="fact assertions")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", choices=("wordllama", "hashing"), default="hashing")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="keep (and reuse) both memories")
    parser.add_argument("--drop", type=Path, default=None, help="drop the memories kept there")
    parser.add_argument("--answers", type=Path, default=None, help="write the answers there")
    parser.add_argument("--compare", type=Path, default=None, help="answers to compare with")
    parser.add_argument("--backends", default="sqlite,postgresql", help="comma-separated")
    parser.add_argument(
        "--parts", default=",".join(PARTS), help="comma-separated: " + ",".join(PARTS)
    )
    args = parser.parse_args(argv)
    if args.drop is not None:
        _drop(args.url, _kept(args.url, args.drop)[0])
        shutil.rmtree(args.drop)
        return 0
    schema, directory = _kept(args.url, args.keep)
    locations = {"sqlite": str(directory), "postgresql": f"{args.url}?schema={schema}"}
    backends = args.backends.split(",")
    parts = args.parts.split(",")
    runs: dict[str, Any] = {}
    answers: dict[str, dict[str, list[Any]]] = {}
    try:
        for name in backends:
            built = args.keep / f"built-{name}" if args.keep is not None else None
            runs[name] = {}
            if built is None or not built.exists():
                runs[name] = build(locations[name], args.size, args.seed, args.embedder)
                if built is not None:
                    built.write_text(json.dumps(runs[name]))
            figures, answers[name] = ask(locations[name], args, parts)
            runs[name].update(figures)
    finally:
        if args.keep is None:
            _drop(args.url, schema)
            shutil.rmtree(directory.parent)
    _print(args, runs, answers, backends, parts)
    if args.answers is not None:
        args.answers.write_text(json.dumps(answers))
    if args.compare is not None:
        _compare(json.loads(args.compare.read_text()), answers)
    if args.out is not None:
        args.out.write_text(json.dumps({"size": args.size, "runs": runs}, indent=2))
    return 0


def _print(
    args: argparse.Namespace,
    runs: dict[str, Any],
    answers: dict[str, dict[str, list[Any]]],
    backends: Sequence[str],
    parts: Sequence[str],
) -> None:
    print(f"{args.size:,} fact assertions, {args.queries} questions, embedder {args.embedder}")
    print(f"{'':24}" + "".join(f"{b + ' p50/p95 ms':>26}" for b in backends))
    for part in parts:
        cells = [f"{runs[b][part]['p50_ms']:.1f} / {runs[b][part]['p95_ms']:.1f}" for b in backends]
        print(f"{part:24}" + "".join(f"{c:>26}" for c in cells))
    for b in backends:
        if "write" in runs[b]:
            print(f"{b}: write {runs[b]['write']['seconds']:.1f} s, project "
                  f"{runs[b]['project']['seconds']:.1f} s")  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.2f}")
    if len(backends) == 2:
        first, second = (answers[b] for b in backends)
        for part in first:
            same = sum(a == b for a, b in zip(first[part], second[part], strict=True))
            print(f"{part}: {same}/{len(first[part])} answers the same on both backends")


def _compare(before: dict[str, dict[str, list[Any]]], now: dict[str, dict[str, list[Any]]]) -> None:
    """How many answers are the same as those of an earlier run (`--answers`)."""
    for backend, parts in now.items():
        for part, found in parts.items():
            earlier = before.get(backend, {}).get(part)
            if earlier is not None:
                same = sum(a == b for a, b in zip(earlier, found, strict=True))
                print(f"{backend} {part}: {same}/{len(found)} answers as in the run compared with")


if __name__ == "__main__":
    sys.exit(main())
