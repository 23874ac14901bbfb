"""Full-text search latency: search_entities, search_facts and search_messages, synthetic data.

Run from the repository root:  python bench/search.py [--entities 10000] [--queries 500]
A quick run (2,000 of each, nothing written unless --out is given):  python bench/search.py --quick
Writes bench/results/search.json.

The memory holds `--entities` entities (one to three made-up words each, an eight-word
summary), as many facts between two of them, and as many messages of twelve words, drawn
from a vocabulary of 3,000 made-up words. Queries are one word prefix (3 to 6 characters)
or a word and a 4-character prefix; each query function is timed on its own, the first
call excluded, inside one read transaction.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from apexmem import AssertFact, Command, Memory, ObserveEntity, RecordMessage
from apexmem.domain.settings import MemorySettings, ProjectionSettings, Settings
from apexmem.readmodels import search_entities, search_facts, search_messages

RESULTS = Path(__file__).parent / "results" / "search.json"
_SYLLABLES = ("ka", "lo", "mi", "ra", "tu", "ne", "so", "vi", "de", "gra", "zen", "rust", "py")
_QUICK = {"entities": 2_000, "queries": 200}


def _memory(directory: Path, size: int, rng: random.Random) -> Memory:
    """A memory with `size` entities, facts and messages, projected once at the end."""

    def word() -> str:
        return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))

    vocabulary = [word() for _ in range(3_000)]
    names: set[str] = set()
    while len(names) < size:
        names.add(" ".join(rng.choice(vocabulary).capitalize() for _ in range(rng.randint(1, 3))))
    ordered = sorted(names)
    commands: list[Command] = [
        ObserveEntity(name=n, summary=" ".join(rng.choices(vocabulary, k=8))) for n in ordered
    ]
    commands += [
        AssertFact(subject=a, relation="relates_to", object=b)
        for a, b in (rng.sample(ordered, 2) for _ in range(size))
    ]
    commands += [
        RecordMessage(
            episode=f"chat-{i % 50}", speaker="user", text=" ".join(rng.choices(vocabulary, k=12))
        )
        for i in range(size)
    ]
    settings = Settings(memory=MemorySettings(projection=ProjectionSettings(inline=False)))
    memory = Memory.open(directory, settings=settings)
    for i in range(0, len(commands), 1_000):
        memory.execute(commands[i : i + 1_000])
    memory.projections.graph.catch_up()
    return memory


Search = Callable[[Connection, str], object]


def _latency(memory: Memory, search: Search, queries: list[str]) -> dict[str, float]:
    times: list[float] = []
    with memory.store.read() as connection:
        search(connection, queries[0])
        for query in queries:
            start = time.perf_counter()
            search(connection, query)
            times.append((time.perf_counter() - start) * 1_000)
    times.sort()
    return {
        "p50_ms": statistics.median(times),
        "p95_ms": times[int(len(times) * 0.95)],
        "max_ms": times[-1],
    }


def run(size: int, queries: int, seed: int = 7) -> dict[str, Any]:
    """Build the memory and time every query function on one- and two-word queries."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        memory = _memory(Path(tmp) / "mem", size, rng)
        built = time.perf_counter() - started
        words = [e.name.split()[0].lower() for e in memory.entities(limit=size)]
        one = [rng.choice(words)[: rng.randint(3, 6)] for _ in range(queries)]
        two = [f"{rng.choice(words)} {rng.choice(words)[:4]}" for _ in range(queries)]
        searches: dict[str, Search] = {
            "entities": search_entities,
            "facts": search_facts,
            "messages": search_messages,
        }
        timings = {
            f"{name} ({label})": _latency(memory, search, chosen)
            for name, search in searches.items()
            for label, chosen in (("1 word", one), ("2 words", two))
        }
        memory.close()
    return {"size": size, "queries": queries, "build_s": built, "latency": timings}


def main() -> None:
    """Parse the options, run, print and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=10_000, help="entities, facts, messages")
    parser.add_argument("--queries", type=int, default=500, help="queries per function and shape")
    parser.add_argument("--quick", action="store_true", help="2,000 of each, 200 queries")
    parser.add_argument("--out", type=Path, default=None, help=f"default: {RESULTS}")
    args = parser.parse_args()
    size, queries = args.entities, args.queries
    if args.quick:
        size, queries = _QUICK["entities"], _QUICK["queries"]
    results = run(size, queries)
    text = json.dumps(results, indent=1)
    print(text)
    out = args.out if args.out is not None or args.quick else RESULTS
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
