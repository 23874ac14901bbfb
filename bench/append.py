"""Append throughput: batched facts, single durable facts, and the raw SQLite ceiling, in one run.

Run from the repository root:  python bench/append.py [--facts 100000] [--runs 3]
Writes bench/results/append.json; the README's Performance section quotes it.

The batched and single runs measure the log alone (inline projection off, as when
`apexmem project --follow` projects in its own process); `single_inline` measures the
default, where every write also brings the read models up to date before it returns.

The machine's speed moves by a fifth from one minute to the next, so the batched and single
runs are repeated (`--runs`) and the median run is reported, with every run's figure. Right
after each batched run, the raw SQLite ceiling inserts the same rows (the log's own stream
ids, versions, topics and payloads) with plain `executemany` into one table keyed by
(stream, version), in the same transactions; the share of the ceiling compares each run with
its own ceiling. The ceiling with ascending keys measured here before is kept beside it
(`raw_sqlite_sequential_keys`): rows of the same size, but keys SQLite appends at the right
edge of its index, which no log of hashed stream ids can have.
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
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from itertools import islice
from pathlib import Path
from typing import Any

import msgspec

from apexmem import Memory, Settings
from apexmem.events.sqlite import CONNECTION_PRAGMAS, EVENTS_TABLE

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


def batched(facts: list[dict[str, Any]], directory: Path, batch: int) -> dict[str, Any]:
    """Facts through the facade in atomic batches of `batch` (the log alone).

    `ends` is the log's last position after each append, so the ceilings below can commit
    the same rows in the same transactions.
    """
    ends = []
    with Memory.open(directory, settings=LOG_ONLY) as memory:
        started = time.perf_counter()
        for i in range(0, len(facts), batch):
            memory.assert_facts(facts[i : i + batch])
            ends.append(memory.log.last_position())
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
        "ends": ends,
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


def logged_rows(log_file: Path, until: int) -> list[tuple[bytes, int, str, bytes]]:
    """The (stream, version, topic, state) rows of a log up to position `until`, in order.

    The ceilings bind them as the log does, blobs as bytearrays (`apexmem.events.sqlite.blobs`:
    sqlite3 adapts each bytes parameter first, ~0.7 µs each), so that a share of the ceiling
    measures what apexmem adds, not how the rows are handed to sqlite3.
    """
    connection = sqlite3.connect(log_file)
    try:
        return connection.execute(
            f"SELECT originator_id, originator_version, topic, state FROM {EVENTS_TABLE} "
            "WHERE rowid <= ? ORDER BY rowid",
            (until,),
        ).fetchall()
    finally:
        connection.close()


def sequential_keys(rows: list[tuple[bytes, int, str, bytes]]) -> Iterator[tuple[Any, ...]]:
    """Rows of the log's average size under ascending keys, which SQLite appends at the right
    edge of each B-tree (the only ceiling this file measured before 2026-11-21)."""
    size = sum(len(r[0]) + len(r[2]) + len(r[3]) + 4 for r in rows) // max(len(rows), 1)
    payload = bytearray(os.urandom(size // 2).hex().encode())
    return ((f"{n:032x}", 1, "fact-asserted.v1", payload) for n in range(len(rows)))


def ceilings(log_file: Path, ends: list[int], scratch: Path) -> dict[str, dict[str, float]]:
    """Both raw ceilings for the appends of a log that ended at positions `ends`: its own
    rows (`raw_sqlite`), and rows of their size under ascending keys."""
    rows = logged_rows(log_file, ends[-1] if ends else 0)
    count = len(rows)
    same = [(bytearray(s), v, topic, bytearray(state)) for s, v, topic, state in rows]
    return {
        "raw_sqlite": raw_ceiling(iter(same), count, ends, scratch / "same"),
        "raw_sqlite_sequential_keys": raw_ceiling(
            sequential_keys(rows), count, ends, scratch / "sequential"
        ),
    }


def raw_ceiling(
    rows: Iterator[tuple[Any, ...]], count: int, ends: list[int], directory: Path
) -> dict[str, float]:
    """Plain executemany of `count` rows into one table keyed by (stream, version), one
    transaction per append of the batched run (`ends`), with the log's pragmas.

    The pragmas are the log's own (WAL, synchronous NORMAL, its cache size and automatic
    checkpoint interval); the checkpoints run inline, as plain SQLite runs them.
    """
    directory.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(directory / "raw.db", isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    for pragma in CONNECTION_PRAGMAS:
        connection.execute(pragma)
    connection.execute(
        "CREATE TABLE events (stream BLOB, version INTEGER, topic TEXT, state BLOB, "
        "PRIMARY KEY (stream, version))"
    )
    started = time.perf_counter()
    last = 0
    for end in ends:
        connection.execute("BEGIN")
        connection.executemany("INSERT INTO events VALUES (?,?,?,?)", islice(rows, end - last))
        connection.execute("COMMIT")
        last = end
    elapsed = time.perf_counter() - started
    inserted = connection.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    connection.close()
    if inserted != count:
        raise RuntimeError(f"the ceiling inserted {inserted} rows, not {count}")
    return {"rows": count, "seconds": elapsed, "rows_per_s": count / elapsed}


def batched_run(facts: list[dict[str, Any]], root: Path, batch: int) -> dict[str, Any]:
    """One batched run, then both ceilings on its rows and transactions, right after."""
    result = batched(facts, root / "batched", batch)
    found = ceilings(root / "batched" / "events.db", result.pop("ends"), root)
    rate = result["events_per_s"]
    return {
        "batched": result,
        **found,
        "share_of_raw": rate / found["raw_sqlite"]["rows_per_s"],
        "share_of_sequential_keys": rate / found["raw_sqlite_sequential_keys"]["rows_per_s"],
    }


def median_run(runs: list[dict[str, Any]], key: Callable[[dict[str, Any]], float]) -> Any:
    """The run with the median value of `key` (the lower middle one of an even count)."""
    return sorted(runs, key=key)[(len(runs) - 1) // 2]


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
    """Run the measurements and write bench/results/append.json."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--facts", type=int, default=100_000, help="facts for the batched run")
    parser.add_argument("--single", type=int, default=5_000, help="facts for the single run")
    parser.add_argument("--inline", type=int, default=5_000, help="facts for the inline run")
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=3, help="batched and single runs")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    facts = workload(args.facts, seed=7)
    singles = workload(args.single, seed=8)
    runs, single_runs = [], []
    with tempfile.TemporaryDirectory(prefix="apexmem-bench-") as work:
        for n in range(args.runs):
            root = Path(work) / f"run-{n}"
            runs.append(batched_run(facts, root, args.batch))
            single_runs.append(single(singles, root / "single"))
        inline = single(workload(args.inline, seed=8), Path(work) / "inline", Settings())
    chosen = median_run(runs, lambda r: r["batched"]["events_per_s"])
    result = {
        "machine": machine(),
        "runs": len(runs),
        "batched": chosen["batched"],
        "raw_sqlite": chosen["raw_sqlite"],
        "raw_sqlite_sequential_keys": chosen["raw_sqlite_sequential_keys"],
        "batched_share_of_raw": statistics.median(r["share_of_raw"] for r in runs),
        "batched_share_of_sequential_keys": statistics.median(
            r["share_of_sequential_keys"] for r in runs
        ),
        "single": median_run(single_runs, lambda r: r["facts_per_s"]),
        "single_inline": inline,
        "every_run": {
            "batched_events_per_s": [r["batched"]["events_per_s"] for r in runs],
            "raw_sqlite_rows_per_s": [r["raw_sqlite"]["rows_per_s"] for r in runs],
            "raw_sqlite_sequential_keys_rows_per_s": [
                r["raw_sqlite_sequential_keys"]["rows_per_s"] for r in runs
            ],
            "share_of_raw": [r["share_of_raw"] for r in runs],
            "share_of_sequential_keys": [r["share_of_sequential_keys"] for r in runs],
            "single_facts_per_s": [r["facts_per_s"] for r in single_runs],
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
