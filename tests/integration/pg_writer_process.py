"""A writer on a PostgreSQL log, for the racing and crash tests (test_pg_writers.py).

Usage:
  python pg_writer_process.py race URL SCHEMA NAME ROUNDS GO_FILE SHARED
      prints "ready", waits for GO_FILE, then for each round k tries version k of the stream
      SHARED (with one new stream beside it) and then a batch of new streams under an
      idempotency key; prints "won k STREAM", "lost k" and "fresh KEY STREAM...".
  python pg_writer_process.py batches URL SCHEMA NAME SIZE
      appends batches of SIZE new streams until killed, all of a batch under one episode;
      prints "ready", then "acked EPISODE" after each append returns.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from uuid import UUID, uuid4

from apexmem.events import ConcurrencyError, FactsRetrieved, NewEvent
from apexmem.events.postgres_log import PostgresLog


def _event(stream: UUID, version: int = 1, episode: str | None = None) -> NewEvent:
    return NewEvent(
        stream_id=stream, version=version, data=FactsRetrieved(fact_ids=[stream]), episode=episode
    )


def race(log: PostgresLog, name: str, rounds: int, go: Path, shared: UUID) -> None:
    """Race the other writers for each version of the shared stream, and write fresh streams."""
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.01)
    for k in range(1, rounds + 1):
        beside = uuid4()
        try:
            log.append([_event(shared, k), _event(beside)])
            print(f"won {k} {beside}", flush=True)
        except ConcurrencyError:
            print(f"lost {k}", flush=True)
        fresh = [uuid4() for _ in range(3)]
        key = f"{name}-{k}"
        log.append([_event(s) for s in fresh], idempotency_key=key)
        log.append([_event(uuid4())], idempotency_key=key)  # repeated: writes nothing
        print(f"fresh {key} {' '.join(map(str, fresh))}", flush=True)


def batches(log: PostgresLog, name: str, size: int) -> None:
    """Append batches of `size` new streams until killed; print each acknowledged one."""
    print("ready", flush=True)
    n = 0
    while True:
        episode = f"{name}-{n}"
        log.append([_event(uuid4(), episode=episode) for _ in range(size)])
        print(f"acked {episode}", flush=True)
        n += 1


def main(argv: list[str]) -> None:
    mode, url, schema, name = argv[:4]
    log = PostgresLog(url, schema=schema)
    try:
        if mode == "race":
            race(log, name, int(argv[4]), Path(argv[5]), UUID(argv[6]))
        else:
            batches(log, name, int(argv[4]))
    finally:
        log.close()


if __name__ == "__main__":
    main(sys.argv[1:])
