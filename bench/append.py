"""Append throughput: batched facts, single durable facts, and the raw SQLite ceiling, in one run.

Run from the repository root:  python bench/append.py [--facts 100000] [--single 5000]
Writes bench/results/append.json; the README's Performance section quotes it.

The batched and single runs measure the log alone (inline projection off, as when
`apexmem project --follow` projects in its own process); `single_inline` measures the
default, where every write also brings the read models up to date before it returns.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any

import msgspec

from apexmem import Memory, Settings
from apexmem.events.sqlite import CONNECTION_PRAGMAS

RESULTS = Path(__file__).parent / "results" / "append.json"
LOG_ONLY = msgspec.convert({"memory": {"projection": {"inline": False}}}, Settings)
_PEOPLE = 5_000
_ORGS = 400
_TOOLS = 800
_RELATIONS = [
    ("works_at", "organization"),
    ("uses", "tool"),
    ("knows", "person"),
    ("lives_in", "location"),
    ("depends_on", "tool"),
]


def workload(count: int, seed: int) -> list[dict[str, Any]]:
    """`count` realistic fact assertions: people, employers, tools, places, over ten years."""
    rng = random.Random(seed)
    start = datetime(2015, 1, 1, tzinfo=UTC)
    facts = []
    for i in range(count):
        relation, object_type = rng.choice(_RELATIONS)
        pool = {"organization": _ORGS, "tool": _TOOLS, "person": _PEOPLE, "location": 200}
        subject = f"person-{rng.randrange(_PEOPLE):05d}"
        target = f"{object_type}-{rng.randrange(pool[object_type]):05d}"
        if target == subject:
            target = f"person-{(int(subject[-5:]) + 1) % _PEOPLE:05d}"
        facts.append(
            {
                "subject": subject,
                "subject_type": "person",
                "relation": relation,
                "object": target,
                "object_type": object_type,
                "fact": f"{subject} {relation.replace('_', ' ')} {target}",
                "confidence": round(rng.uniform(0.5, 1.0), 3),
                "valid_from": start + timedelta(days=rng.randrange(3650)),
                "episode": f"conv-{i // 50}",
                "actor": "bench",
            }
        )
    return facts


def batched(facts: list[dict[str, Any]], directory: Path, batch: int) -> dict[str, float]:
    """Facts through the facade in atomic batches of `batch` (the log alone)."""
    with Memory.open(directory, settings=LOG_ONLY) as memory:
        started = time.perf_counter()
        for i in range(0, len(facts), batch):
            memory.assert_facts(facts[i : i + batch])
        elapsed = time.perf_counter() - started
        events = memory.log.last_position()
    size = (directory / "events.db").stat().st_size  # after close: the WAL is checkpointed
    return {
        "facts": len(facts),
        "events": events,
        "seconds": elapsed,
        "facts_per_s": len(facts) / elapsed,
        "events_per_s": events / elapsed,
        "log_bytes_per_fact": size / len(facts),
    }


def single(
    facts: list[dict[str, Any]], directory: Path, settings: Settings = LOG_ONLY
) -> dict[str, float]:
    """One fact per append, each its own committed transaction."""
    latencies = []
    with Memory.open(directory, settings=settings) as memory:
        started = time.perf_counter()
        for fact in facts:
            t = time.perf_counter()
            memory.assert_fact(**fact)
            latencies.append(time.perf_counter() - t)
        elapsed = time.perf_counter() - started
        events = memory.log.last_position()
    quantiles = statistics.quantiles(latencies, n=100)
    return {
        "facts": len(facts),
        "events": events,
        "seconds": elapsed,
        "facts_per_s": len(facts) / elapsed,
        "events_per_s": events / elapsed,
        "p50_ms": quantiles[49] * 1e3,
        "p95_ms": quantiles[94] * 1e3,
        "p99_ms": quantiles[98] * 1e3,
    }


def raw_ceiling(rows: int, row_bytes: int, directory: Path, batch: int) -> dict[str, float]:
    """Plain executemany of rows of the same size into one table, same pragmas, same batches.

    The pragmas are the log's own (WAL, synchronous NORMAL, its cache size and automatic
    checkpoint interval); the checkpoints run inline, as plain SQLite runs them.
    """
    connection = sqlite3.connect(directory / "raw.db", isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    for pragma in CONNECTION_PRAGMAS:
        connection.execute(pragma)
    connection.execute(
        "CREATE TABLE events (stream TEXT, version INTEGER, topic TEXT, state BLOB, "
        "PRIMARY KEY (stream, version))"
    )
    payload = os.urandom(row_bytes // 2).hex().encode()
    started = time.perf_counter()
    for i in range(0, rows, batch):
        connection.execute("BEGIN")
        connection.executemany(
            "INSERT INTO events VALUES (?,?,?,?)",
            ((f"{n:032x}", 1, "fact-asserted.v1", payload) for n in range(i, min(i + batch, rows))),
        )
        connection.execute("COMMIT")
    elapsed = time.perf_counter() - started
    connection.close()
    return {"rows": rows, "row_bytes": row_bytes, "seconds": elapsed, "rows_per_s": rows / elapsed}


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    packages = ("eventsourcing", "msgspec", "blake3", "sqlalchemy")
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "sqlite": sqlite3.sqlite_version,
        "date": datetime.now(UTC).date().isoformat(),
        **{name: version(name) for name in packages},
    }


def main(argv: list[str] | None = None) -> int:
    """Run the three measurements and write bench/results/append.json."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--facts", type=int, default=100_000, help="facts for the batched run")
    parser.add_argument("--single", type=int, default=5_000, help="facts for the single run")
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    facts = workload(args.facts, seed=7)
    with tempfile.TemporaryDirectory(prefix="apexmem-bench-") as work:
        root = Path(work)
        result_batched = batched(facts, root / "batched", args.batch)
        result_single = single(workload(args.single, seed=8), root / "single")
        result_inline = single(workload(args.single, seed=8), root / "inline", Settings())
        row_bytes = int(os.path.getsize(root / "batched" / "events.db") / result_batched["events"])
        ceiling = raw_ceiling(int(result_batched["events"]), row_bytes, root, args.batch)
    result = {
        "machine": machine(),
        "batched": result_batched,
        "single": result_single,
        "single_inline": result_inline,
        "raw_sqlite": ceiling,
        "batched_share_of_raw": result_batched["events_per_s"] / ceiling["rows_per_s"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
