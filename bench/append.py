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
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from itertools import pairwise
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

    `ends` is the log's last position after each append (read outside the timing), so the
    ceilings can commit the same rows in the same transactions.
    """
    elapsed, ends = 0.0, []
    with Memory.open(directory, settings=LOG_ONLY) as memory:
        for i in range(0, len(facts), batch):
            started = time.perf_counter()
            memory.assert_facts(facts[i : i + batch])
            elapsed += time.perf_counter() - started
            ends.append(memory.log.last_position())
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
    facts: list[dict[str, Any]], directory: Path | str, settings: Settings = LOG_ONLY
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


Row = tuple[bytes, int, str, bytes]


def logged_rows(connection: sqlite3.Connection) -> list[Row]:
    """The (stream, version, topic, state) rows of a log, in position order."""
    return connection.execute(
        f"SELECT originator_id, originator_version, topic, state FROM {EVENTS_TABLE} ORDER BY rowid"
    ).fetchall()


class Ceiling:
    """The raw SQLite ceiling: plain `executemany` into one table keyed by (stream, version),
    one transaction per call, timed; with the log's pragmas (WAL, synchronous NORMAL, its
    cache size and automatic checkpoint interval; checkpoints run inline, as plain SQLite
    runs them).

    `same` inserts the log's own rows: its stream ids (random, as hashed ids are), versions,
    topics and payloads. Otherwise it inserts rows of their average size under ascending
    keys, which SQLite appends at the right edge of each B-tree (the only ceiling this file
    measured before 2026-11-21). Blobs are bound as bytearrays, as the log binds them
    (`apexmem.events.sqlite.blobs`: sqlite3 adapts each bytes parameter first, ~0.7 µs
    each), so a share measures what apexmem adds, not how rows are handed to sqlite3.
    """

    def __init__(self, directory: Path, *, same: bool) -> None:
        self.directory = directory
        self.same = same
        self.rows = 0
        self.seconds = 0.0
        directory.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(directory / "raw.db", isolation_level=None)
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=NORMAL")
        for pragma in CONNECTION_PRAGMAS:
            self._connection.execute(pragma)
        self._connection.execute(
            "CREATE TABLE events (stream BLOB, version INTEGER, topic TEXT, state BLOB, "
            "PRIMARY KEY (stream, version))"
        )

    def insert(self, rows: Sequence[Row]) -> None:
        """Insert (the counterparts of) one append's rows in one timed transaction."""
        bound: list[tuple[Any, ...]]
        if self.same:
            bound = [(bytearray(s), v, topic, bytearray(state)) for s, v, topic, state in rows]
        else:
            size = sum(len(r[0]) + len(r[2]) + len(r[3]) + 4 for r in rows) // max(len(rows), 1)
            payload = bytearray(os.urandom(size // 2).hex().encode())
            keys = range(self.rows, self.rows + len(rows))
            bound = [(f"{n:032x}", 1, "fact-asserted.v1", payload) for n in keys]
        started = time.perf_counter()
        self._connection.execute("BEGIN")
        self._connection.executemany("INSERT INTO events VALUES (?,?,?,?)", bound)
        self._connection.execute("COMMIT")
        self.seconds += time.perf_counter() - started
        self.rows += len(rows)

    def close(self, *, keep: bool = False) -> dict[str, float]:
        """Check the row count, close, and delete the files unless `keep`; the figures."""
        inserted = self._connection.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        self._connection.close()
        if not keep:  # dirty pages of files kept would be written back during later runs
            shutil.rmtree(self.directory)
        if inserted != self.rows:
            raise RuntimeError(f"the ceiling holds {inserted} rows, not {self.rows}")
        return {"rows": self.rows, "seconds": self.seconds, "rows_per_s": self.rows / self.seconds}


def ceilings(
    log_file: Path, ends: Sequence[int], scratch: Path, *, keep: bool = False
) -> dict[str, dict[str, float]]:
    """Both ceilings for a log whose appends ended at positions `ends`, one after the other,
    each inserting all the rows back to back (nothing else runs between its transactions,
    so SQLite's pages stay in the CPU's caches: the highest rate it reaches). The rows are
    read first and held in memory, about 630 bytes per event (about 1 GB for the suite's
    million facts, after its writer's peak RSS is taken). `keep` keeps their files, in
    `scratch`/<name>."""
    found = {}
    connection = sqlite3.connect(log_file)
    try:
        rows = logged_rows(connection)
    finally:
        connection.close()
    for name, same in (("raw_sqlite", True), ("raw_sqlite_sequential_keys", False)):
        ceiling = Ceiling(scratch / name, same=same)
        for start, end in pairwise([0, *ends]):
            ceiling.insert(rows[start:end])
        found[name] = ceiling.close(keep=keep)
    return found


def batched_run(facts: list[dict[str, Any]], root: Path, batch: int) -> dict[str, Any]:
    """One batched run, then both ceilings of its rows, in its transactions, right after."""
    result = batched(facts, root / "batched", batch)
    found = ceilings(root / "batched" / "events.db", result.pop("ends"), root)
    shutil.rmtree(root / "batched")
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
