"""Vectors: WordLlama throughput, the vectors projection's catch-up, FAISS against a full scan.

Run from the repository root:  python bench/vectors.py [--events 10000] [--out]
With --out, writes bench/results/vectors.json.
The FAISS index alone at scale (bench/faiss_scale.py; build, save, load, recall@10, peak
RSS, each in its own process):  python bench/vectors.py --faiss 1000000 [--baseline OLD.py]
[--ef-construction N] [--out]  (writes bench/results/faiss-<facts>.json with --out; exits 1
when a run's recall@10 against an exact scan is below 0.97).

The log is written by bench/project.py's workload with inline projection off. The graph is
projected first (not timed here), then the vectors projection catches up from zero with
WordLlama (every distinct text embedded once), then again from zero with the cache warm
(nothing embedded: what a rebuild costs). WordLlama alone is timed on the log's distinct
texts in batches of 2,000 (the runner's batch) and one text at a time. Nearest-fact
questions are answered by the FAISS index and by a scan of every SQL vector.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import faiss_scale
from project import write_log
from sqlalchemy import func, select

from apexmem import Memory
from apexmem.domain.settings import MemorySettings, ProjectionSettings, Settings
from apexmem.embedders import WordLlamaEmbedder
from apexmem.projections.vectors import text_of
from apexmem.readmodels.vectors import brute_force, vector_cache

RESULTS = Path(__file__).parent / "results" / "vectors.json"


def _ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(ordered[int(len(ordered) * 0.95)] * 1000, 3),
    }


def embedding_throughput(texts: list[str]) -> dict[str, Any]:
    """Texts per second in runner-sized batches, and the latency of one text."""
    embedder = WordLlamaEmbedder()
    embedder.embed(["warm up"])
    started = time.perf_counter()
    for i in range(0, len(texts), 2_000):
        embedder.embed(texts[i : i + 2_000])
    seconds = time.perf_counter() - started
    single = []
    for text in texts[:500]:
        t = time.perf_counter()
        embedder.embed([text])
        single.append(time.perf_counter() - t)
    return {
        "texts": len(texts),
        "texts_per_s": round(len(texts) / seconds),
        "one_text": _ms(single),
    }


def catch_up(memory: Memory) -> dict[str, Any]:
    """The vectors projection from zero: cold cache, then warm cache."""
    vectors = memory.projections.vectors
    assert vectors is not None
    memory.projections.graph.catch_up()
    started = time.perf_counter()
    cold = vectors.catch_up()
    cold_s = time.perf_counter() - started
    with memory.store.read() as connection:
        embedded = connection.execute(select(func.count()).select_from(vector_cache)).scalar()
    memory.projections.drop_vectors()
    started = time.perf_counter()
    warm = vectors.catch_up()
    warm_s = time.perf_counter() - started
    return {
        "events": cold.events,
        "texts_embedded": embedded,
        "cold_events_per_s": round(cold.events / cold_s),
        "cold_seconds": round(cold_s, 3),
        "warm_events_per_s": round(warm.events / warm_s),
        "warm_seconds": round(warm_s, 3),
    }


def nearest(memory: Memory, questions: list[str]) -> dict[str, Any]:
    """Nearest 10 facts by the FAISS index and by a full scan; how often their scores agree."""
    similarity = memory.similarity
    assert similarity is not None
    index, embedder = similarity.index, similarity.embedder
    started = time.perf_counter()
    index.sync()
    first_open = time.perf_counter() - started
    faiss_times, scan_times, agree = [], [], 0
    for question in questions:
        query = embedder.embed([question])[0]
        t = time.perf_counter()
        found = index.nearest("fact", query, 10)
        faiss_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        with memory.store.read() as connection:
            exact = brute_force(connection, "fact", query, 10, model=embedder.name)
        scan_times.append(time.perf_counter() - t)
        # Equal scores (the same sentence on several facts) may come in either order.
        agree += all(abs(a - b) < 1e-4 for (_, a), (_, b) in zip(found, exact, strict=True))
    return {
        "facts": index.size("fact"),
        "index_built_s": round(first_open, 3),
        "faiss": _ms(faiss_times),
        "sql_scan": _ms(scan_times),
        "same_top10_scores": f"{agree}/{len(questions)}",
    }


def main(argv: list[str] | None = None) -> int:
    """Run the measurements; print them, and write the results file with --out."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=10_000, help="events written first")
    parser.add_argument("--out", action="store_true", help=f"write {RESULTS}")
    parser.add_argument("--faiss", type=int, default=0, help="the FAISS index alone at N facts")
    parser.add_argument("--baseline", default=None, help="with --faiss: another vector_index.py")
    parser.add_argument("--ef-construction", type=int, default=None, help="with --faiss")
    args = parser.parse_args(argv)
    if args.faiss:
        scaled = faiss_scale.run(
            args.faiss, baseline=args.baseline, ef_construction=args.ef_construction
        )
        print(json.dumps(scaled, indent=2))
        if args.out:
            out = RESULTS.with_name(f"faiss-{args.faiss}.json")
            out.write_text(json.dumps(scaled, indent=2) + "\n", encoding="utf-8")
        missed = faiss_scale.below_floor(scaled)
        for line in missed:
            print(line, file=sys.stderr)
        return 1 if missed else 0
    settings = Settings(memory=MemorySettings(projection=ProjectionSettings(inline=False)))
    with tempfile.TemporaryDirectory() as root:
        directory = Path(root) / "mem"
        written = write_log(directory, args.events, seed=1)
        with Memory.open(directory, settings=settings) as memory:
            texts = list(dict.fromkeys(t.text for e in memory.events() if (t := text_of(e))))
            results = {
                "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
                "log": {"events": written["events"]},
                "wordllama": embedding_throughput(texts),
                "catch_up": catch_up(memory),
                "nearest": nearest(memory, texts[:: max(1, len(texts) // 200)][:200]),
            }
    print(json.dumps(results, indent=2))
    if args.out:
        RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
