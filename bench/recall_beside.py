"""The suite's recall, asked again of memories it kept, the backends taking turns.

Run from the repository root on the memories of one suite run (`python -m bench --sizes N
--backend URL --work DIR --keep`):
  python bench/recall_beside.py DIR/size-N/memory 'postgresql://...?schema=bench_suiteN_...'
                                [--size N] [--queries 300] [--rounds 3] [--out FILE]
Each place is opened as the suite's reader opens it (inline projection on, usage recorded,
the clock at the data's last recorded time) and asked the suite's questions in each of its
four recall modes. A round asks every mode of every place, the places in turns (the first
place first in even rounds, last in odd ones), so a machine busier for a while weighs on
every place alike: each round's p95 of a mode is a baseline for the others'. Printed per
mode: each place's p50 and p95 of every round, and the ratio of each later place's p95 to
the first's, per round and of the median p95s.
"""

from __future__ import annotations

import argparse
import statistics
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import msgspec
from dataclock import data_clock
from places import Place, vacuum_catalogs
from recall import World, questions, recaller, timed
from suite import _RECALL_MODES, settings_for

from apexmem import Memory
from apexmem.location import locate


def rounds(places: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Every round's timings: mode -> place -> a `timed` result per round."""
    found: dict[str, dict[str, list[dict[str, Any]]]] = {
        mode: {place: [] for place in places} for mode in _RECALL_MODES
    }
    with ExitStack() as stack:
        settings = settings_for(args.embedder, inline=True)
        opened = [
            stack.enter_context(Memory.open(p, settings=settings, clock=data_clock(p)))
            for p in places
        ]
        asked = [
            questions(World(args.size, args.seed), m, args.queries, args.seed + 2) for m in opened
        ]
        for turn in range(args.rounds):
            order = list(range(len(places)))
            if turn % 2:
                order.reverse()
            for label, (mode, past) in _RECALL_MODES.items():
                for i in order:
                    result = timed(opened[i], recaller(opened[i], mode, past), asked[i])
                    found[label][places[i]].append(result)
                    print(f"round {turn + 1} {label:<17} {_short(places[i]):<28} "
                          f"p50 {result['p50_ms']:6.1f}  p95 {result['p95_ms']:6.1f} ms",
                          flush=True)  # fmt: skip
    return found


def summary(found: dict[str, Any], places: list[str]) -> list[str]:
    """Per mode: each place's median p95 over the rounds, and each later place's ratio to
    the first's (per round, and of the medians)."""
    lines = []
    for label, by_place in found.items():
        first = [r["p95_ms"] for r in by_place[places[0]]]
        parts = [f"{label:<17} {_short(places[0])} p95 {statistics.median(first):.1f} ms"]
        for place in places[1:]:
            p95 = [r["p95_ms"] for r in by_place[place]]
            each = ", ".join(f"{b / a:.2f}" for a, b in zip(first, p95, strict=True))
            ratio = statistics.median(p95) / statistics.median(first)
            parts.append(
                f"{_short(place)} p95 {statistics.median(p95):.1f} ms: {ratio:.2f}x ({each})"
            )
        lines.append("; ".join(parts))
    return lines


def _short(place: str) -> str:
    return "postgresql" if place.startswith("postgresql") else "sqlite"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("places", nargs="+", help="memory directories or PostgreSQL URLs")
    parser.add_argument("--size", type=int, default=1_000_000, help="the suite's size")
    parser.add_argument("--queries", type=int, default=300, help="questions per mode")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--embedder", choices=("wordllama", "hashing"), default="wordllama")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, help="write every timing there (JSON)")
    args = parser.parse_args(argv)
    for place in args.places:
        if place.startswith("postgresql"):
            vacuum_catalogs(Place(place, locate(place).url, None))
    found = rounds(args.places, args)
    for line in summary(found, args.places):
        print(line)
    if args.out is not None:
        args.out.write_bytes(msgspec.json.encode(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
