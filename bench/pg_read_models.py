"""Recall and full-text search latency on PostgreSQL beside SQLite, for the same memory.

The workload of bench/recall.py (`--size` fact assertions, one seed) is written into a
directory (SQLite) and into a fresh schema of `--url` (PostgreSQL), each projected from zero;
then the same questions are asked of both: recall (spreading activation, and BFS) and
search_facts, one process, the first call excluded. The schema is dropped at the end.

    python bench/pg_read_models.py --url postgresql://postgres@127.0.0.1/postgres --size 10000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any
from uuid import uuid4

import psycopg
from recall import (
    World,
    _embedder,
    _latencies,
    project,
    questions,
    recaller,
    timed,
    write_log,
)

from apexmem import Memory
from apexmem.domain.settings import MemorySettings, ProjectionSettings, Settings


def measure(location: str, size: int, seed: int, count: int, embedder: str) -> dict[str, Any]:
    """Write, project and ask at `location`; the figures."""
    written = write_log(location, size, seed, embedder)  # type: ignore[arg-type]
    projected = project(location, embedder)  # type: ignore[arg-type]
    settings = Settings(memory=MemorySettings(projection=ProjectionSettings(inline=False)))
    with Memory.open(location, settings=settings, embedder=_embedder(embedder)) as memory:
        asked = questions(World(size, seed), memory, count, seed + 2)
        texts = [q.text for q in asked]
        view = memory.as_of()
        return {
            "write": written,
            "project": projected,
            "recall_activation": timed(memory, recaller(memory, "activation", False), asked),
            "recall_bfs": timed(memory, recaller(memory, "bfs", False), asked),
            "search_facts": _latencies(lambda t: view.search_facts(t, limit=10), texts),
            "search_entities": _latencies(lambda t: view.search_entities(t, limit=10), texts),
        }


def main(argv: list[str] | None = None) -> int:
    """Run both backends and print a table (and the JSON with --out)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a PostgreSQL database to make a schema in")
    parser.add_argument("--size", type=int, default=10_000, help="fact assertions")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", choices=("wordllama", "hashing"), default="hashing")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    schema = f"bench_{uuid4().hex[:12]}"
    runs: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory() as directory:
            for name, location in (
                ("sqlite", str(Path(directory) / "mem")),
                ("postgresql", f"{args.url}?schema={schema}"),
            ):
                runs[name] = measure(location, args.size, args.seed, args.queries, args.embedder)
    finally:
        with psycopg.connect(args.url, autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    print(f"{args.size:,} fact assertions, {args.queries} questions, embedder {args.embedder}")
    print(f"{'':18} {'SQLite p50/p95 ms':>20} {'PostgreSQL p50/p95 ms':>24}")
    for part in ("recall_activation", "recall_bfs", "search_facts", "search_entities"):
        cells = [f"{runs[b][part]['p50_ms']:.1f} / {runs[b][part]['p95_ms']:.1f}" for b in runs]
        print(f"{part:18} {cells[0]:>20} {cells[1]:>24}")
    for b in runs:
        print(f"{b}: write {runs[b]['write']['seconds']:.1f} s, project "
              f"{runs[b]['project']['seconds']:.1f} s")  # fmt: skip
    if args.out is not None:
        args.out.write_text(json.dumps({"size": args.size, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
