"""Batched append on PostgreSQL with 1, 2 and 4 writer processes, beside SQLite's one writer.

Run from the repository root (PostgreSQL answering at the URL; the schema is made and
dropped):
  python bench/pg_append.py [--facts 20000] [--writers 1,2,4] [--url postgresql://...]
                            [--out bench/results/pg_append.json]
Writes bench/results/pg_append.json (or --out).

Every run is the same facts (bench/append.py's workload) through the facade in atomic
batches of 1,000, inline projection off (the log alone, as when `apexmem project --follow`
projects elsewhere). With N writers each process asserts its own N-th of them, about its
own entities (names prefixed per writer), so the writers contend for the log's lock, not for
the same streams. Each process opens its memory and builds its facts first; the clock runs
from the moment all are released together until the last one finishes. SQLite runs the
same way with one writer process (a SQLite memory has one writer at a time).

The same is then measured for the log alone (`log_alone`): each writer appends batches of
1,000 ready-made events (each a new stream, a payload of eight fact ids, ~420 bytes stored)
straight to the log, so only the append itself (encoding, chain, the lock, the commit) is
timed; the facade's figures include deciding, which the write path does under the log's lock.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "pg_append.json"
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
BATCH = 1_000


def _wait_for(go: Path) -> None:
    """Until `go` exists; exit when the run that started this worker has died (its workers
    outlived it before and kept two cores busy)."""
    parent = os.getppid()
    while not go.exists():
        if os.getppid() != parent:
            sys.exit("the benchmark run that started this worker is gone")
        time.sleep(0.001)


def worker(place: str, index: int, count: int, seed: int, go: Path) -> None:
    """Assert `count` facts in batches once `go` exists; print the wall-clock start and end."""
    sys.path.insert(0, str(Path(__file__).parent))
    from append import LOG_ONLY, workload

    from apexmem import Memory

    facts = workload(count, seed)
    for fact in facts:  # this writer's own entities: contention is for the log alone
        fact["subject"] = f"w{index}-{fact['subject']}"
        fact["object"] = f"w{index}-{fact['object']}"
    with Memory.open(place, settings=LOG_ONLY) as memory:
        print("ready", flush=True)
        _wait_for(go)
        started = time.time()
        for i in range(0, len(facts), BATCH):
            memory.assert_facts(facts[i : i + BATCH])
        print(json.dumps({"start": started, "end": time.time()}), flush=True)


def log_worker(place: str, count: int, go: Path) -> None:
    """Append `count` new one-event streams in batches straight to the log once `go` exists."""
    from uuid import uuid4

    from apexmem.events import EventLog, FactsRetrieved, NewEvent
    from apexmem.events.postgres_log import PostgresLog

    url, _, schema = place.partition("?schema=")
    log = PostgresLog(url, schema=schema) if schema else EventLog(place)
    batches = [
        [
            NewEvent(
                stream_id=uuid4(),
                version=1,
                data=FactsRetrieved(fact_ids=[uuid4() for _ in range(8)]),
                actor="bench",
            )
            for _ in range(min(BATCH, count - i))
        ]
        for i in range(0, count, BATCH)
    ]
    print("ready", flush=True)
    _wait_for(go)
    started = time.time()
    for batch in batches:
        log.append(batch)
    print(json.dumps({"start": started, "end": time.time()}), flush=True)
    log.close()


def run(
    place: str, writers: int, facts: int, directory: Path, *, alone: bool = False
) -> dict[str, Any]:
    """`facts` facts shared among `writers` processes on `place`; aggregate throughput."""
    go = directory / f"go-{writers}-{time.monotonic_ns()}"
    share = facts // writers
    _create(place, alone=alone)
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--log-worker" if alone else "--worker",
                place,
                str(i),
                str(share),
                str(go),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(writers)
    ]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    go.touch()
    times = []
    for process in processes:
        out, _ = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"a writer failed (exit {process.returncode})")
        times.append(json.loads(out.splitlines()[-1]))
    seconds = max(t["end"] for t in times) - min(t["start"] for t in times)
    events = share * writers if alone else _events(place)
    return {
        "writers": writers,
        "facts": share * writers,
        "events": events,
        "seconds": seconds,
        "facts_per_s": share * writers / seconds,
        "events_per_s": events / seconds,
    }


def _create(place: str, *, alone: bool) -> None:
    """Make the memory (or the log alone) once, as `apexmem init` does before its writers
    start: the timed processes then find its tables instead of racing to create them."""
    sys.path.insert(0, str(Path(__file__).parent))
    from append import LOG_ONLY

    from apexmem import Memory
    from apexmem.events import EventLog
    from apexmem.events.postgres_log import PostgresLog

    if not alone:
        Memory.open(place, settings=LOG_ONLY).close()
        return
    url, _, schema = place.partition("?schema=")
    (PostgresLog(url, schema=schema) if schema else EventLog(place)).close()


def _events(place: str) -> int:
    from apexmem import Memory

    with Memory.open(place) as memory:
        return memory.log.last_position()


def _drop(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=20_000)
    parser.add_argument("--writers", default="1,2,4")
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--events", type=int, default=40_000, help="for the log alone")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    parser.add_argument("--worker", nargs=4, metavar=("PLACE", "INDEX", "COUNT", "GO"))
    parser.add_argument("--log-worker", nargs=4, metavar=("PLACE", "INDEX", "COUNT", "GO"))
    args = parser.parse_args()
    if args.worker:
        place, index, count, go = args.worker
        worker(place, int(index), int(count), seed=int(index), go=Path(go))
        return
    if args.log_worker:
        place, _, count, go = args.log_worker
        log_worker(place, int(count), Path(go))
        return
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        for alone, total in ((False, args.facts), (True, args.events)):
            kind = "log_alone" if alone else "facade"
            sqlite_place = str(directory / f"{kind}.db" if alone else directory / "mem")
            sqlite = run(sqlite_place, 1, total, directory, alone=alone)
            runs.append({"backend": "sqlite", "kind": kind, **sqlite})
            print(f"{kind}: sqlite, 1 writer: {sqlite['events_per_s']:,.0f} events/s", flush=True)
            for writers in (int(w) for w in args.writers.split(",")):
                schema = f"bench_append_{os.getpid()}_{kind}_{writers}"
                try:
                    place = f"{args.url}?schema={schema}"
                    result = run(place, writers, total, directory, alone=alone)
                finally:
                    _drop(args.url, schema)
                runs.append({"backend": "postgresql", "kind": kind, **result})
                ratio = result["events_per_s"] / sqlite["events_per_s"]
                print(
                    f"{kind}: postgresql, {writers} writer(s): {result['events_per_s']:,.0f} "
                    f"events/s ({ratio:.2f}x SQLite's one writer)",
                    flush=True,
                )
    args.out.write_text(
        json.dumps(
            {
                "command": " ".join(["python", "bench/pg_append.py", *sys.argv[1:]]),
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "machine": {
                    "cpus": os.cpu_count(),
                    "load_average": os.getloadavg(),
                    "python": platform.python_version(),
                    "psycopg": version("psycopg"),
                },
                "batch": BATCH,
                "runs": runs,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
