"""Where a recall's time goes: client wall time per statement family, on an existing memory.

Run from the repository root on a memory the suite kept (`python -m bench --work DIR
--keep`, or `bench/pg_read_models.py --keep DIR`):
  python bench/statement_times.py PLACE [--size 1000000] [--mode bfs] [--past]
                                  [--queries 60] [--embedder wordllama] [--tail 0.05]
PLACE is a memory directory or a PostgreSQL URL with `?schema=`. The questions are the
suite's for `--size` (bench/recall.py). Every statement a recall runs, through the driver's
cursor (`readmodels.prepared`) or through SQLAlchemy, is timed and grouped by its first
words and the table it reads; printed: p50 and p95 of the recalls, the SQL share of their
mean, and each family's milliseconds and count per recall, largest first; with `--tail`,
the slowest recalls' questions and where their time went. Usage is not
recorded and nothing is projected inline, so the memory is left as it was. The clock
stands at the data's last recorded time (`dataclock`), as for the suite's reader.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from dataclock import data_clock
from recall import World, _embedder, questions
from sqlalchemy import event
from sqlalchemy.engine import Engine

from apexmem import Memory
from apexmem.domain.settings import (
    MemorySettings,
    ProjectionSettings,
    RecallSettings,
    Settings,
)
from apexmem.readmodels import prepared, vectors

_SPENT: dict[str, float] = defaultdict(float)
_COUNT: dict[str, int] = defaultdict(int)


def family(statement: str) -> str:
    """A statement's first words and the first table it reads."""
    text = re.sub(r"\s+", " ", statement)
    table = re.search(r"FROM (\w+)", text)
    return f"{text[:38]} | {table.group(1) if table else ''}"


def _timed_driver(rows: Callable[..., Any]) -> Callable[..., Any]:
    def timed(connection: Any, statement: str, args: Any, **options: Any) -> Any:
        started = time.perf_counter()
        try:
            return rows(connection, statement, args, **options)
        finally:
            _SPENT[family(statement)] += time.perf_counter() - started
            _COUNT[family(statement)] += 1

    return timed


def _watch() -> None:
    """Time every statement: the driver's cursor path and SQLAlchemy's."""
    timed = _timed_driver(prepared.driver_rows)
    prepared.driver_rows = timed
    vectors.driver_rows = timed  # type: ignore[attr-defined]  # its import of the same
    starts: dict[int, float] = {}

    @event.listens_for(Engine, "before_cursor_execute")
    def _before(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        starts[id(cursor)] = time.perf_counter()

    @event.listens_for(Engine, "after_cursor_execute")
    def _after(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        name = "SA " + family(statement)
        _SPENT[name] += time.perf_counter() - starts.pop(id(cursor), time.perf_counter())
        _COUNT[name] += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("place", help="a memory directory, or a PostgreSQL URL with ?schema=")
    parser.add_argument("--size", type=int, default=1_000_000, help="the suite's size")
    parser.add_argument("--mode", choices=("bfs", "activation"), default="bfs")
    parser.add_argument("--past", action="store_true", help="ask as of each question's past")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--embedder", choices=("wordllama", "hashing"), default="wordllama")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--tail", type=float, default=0.0, help="also show the slowest share (0.05: 5%%)"
    )
    args = parser.parse_args(argv)
    settings = Settings(
        memory=MemorySettings(
            projection=ProjectionSettings(inline=False),
            recall=RecallSettings(record_usage=False),
        )
    )
    _watch()
    # At the data's own time, as the suite's reader asks: at the wall clock, years after the
    # bench's simulated dates, every fact has faded and full text reads every window.
    clock = data_clock(args.place)
    embedder = _embedder(args.embedder)
    with Memory.open(args.place, settings=settings, embedder=embedder, clock=clock) as memory:
        asked = questions(World(args.size, args.seed), memory, args.queries, args.seed + 2)

        def recall(question: Any) -> Any:
            return memory.recall(
                question.text,
                mode=args.mode,
                valid_at=question.valid_at if args.past else None,
                known_at=question.known_at if args.past else None,
            )

        for question in asked[:5]:  # warm up: the model, the index, the caches
            recall(question)
        _SPENT.clear()
        _COUNT.clear()
        latencies, each = [], []
        for question in asked:
            before = dict(_SPENT)
            started = time.perf_counter()
            recall(question)
            latencies.append(time.perf_counter() - started)
            each.append({k: v - before.get(k, 0.0) for k, v in _SPENT.items()})
    ordered = sorted(latencies)
    n = len(ordered)
    p50, p95 = ordered[n // 2] * 1e3, ordered[min(n - 1, int(n * 0.95))] * 1e3
    sql, mean = sum(_SPENT.values()) * 1e3 / n, sum(latencies) * 1e3 / n
    print(f"{args.mode}{' as of' if args.past else ''}: {n} recalls, p50 {p50:.1f} ms, ", end="")
    print(f"p95 {p95:.1f} ms; SQL {sql:.1f} of {mean:.1f} ms per recall")
    for name, spent in sorted(_SPENT.items(), key=lambda item: -item[1]):
        print(f"{spent * 1e3 / n:8.2f} ms {_COUNT[name] / n:6.2f}x  {name}")
    if args.tail:
        _tail(asked, latencies, each, args.tail)
    return 0


def _tail(
    asked: list[Any], latencies: list[float], each: list[dict[str, float]], share: float
) -> None:
    """The slowest `share` of the recalls: each question and its time, then where their
    time went (each family's mean over them)."""
    slowest = sorted(range(len(latencies)), key=lambda i: -latencies[i])
    slowest = slowest[: max(1, round(len(latencies) * share))]
    print(f"the slowest {len(slowest)}:")
    for i in slowest:
        sql = sum(each[i].values()) * 1e3
        print(f"{latencies[i] * 1e3:8.1f} ms (SQL {sql:.1f})  {asked[i].text}")
    spent: dict[str, float] = defaultdict(float)
    for i in slowest:
        for name, seconds in each[i].items():
            spent[name] += seconds
    for name, seconds in sorted(spent.items(), key=lambda item: -item[1])[:12]:
        print(f"{seconds * 1e3 / len(slowest):8.2f} ms  {name}")


if __name__ == "__main__":
    raise SystemExit(main())
