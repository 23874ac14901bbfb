"""A PostgreSQL run beside SQLite's of the same size and invocation: many writers and
readers on both, one table of both, and issue 25's targets.

The table is report.py's rows with a column per backend, then the runs with many processes
(bench/concurrency.py) and the targets: aggregate batched append with the most writers on
PostgreSQL at least SQLite's one writer (same facts, same batches); every recall mode's p95
on PostgreSQL within twice SQLite's, one reader; the as-of p95 on PostgreSQL under 10 ms
in all three forms.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final

import psycopg
from concurrency import readers, writers
from places import Place
from report import markdown, rows, write_results

from apexmem import Settings
from apexmem.location import locate

__all__ = [
    "backend_machine", "beside_markdown", "issue_targets", "side_by_side", "table", "write_beside",
]  # fmt: skip

Run = dict[str, Any]
_RECALL_RATIO: Final = 2.0
_AS_OF_MS: Final = 10.0


def side_by_side(
    args: argparse.Namespace, size: int, sqlite: Place, postgres: Place, settings: Settings
) -> dict[str, Any]:
    """Append with each writer count into fresh memories, and recall with each reader count
    on the two memories of the size, on both backends."""
    counts = [int(c) for c in args.writers.split(",")]
    facts = min(args.writer_facts, size)
    kept = args.keep
    assert postgres.url is not None
    asked = {"size": size, "seed": args.seed, "queries": args.queries}
    reading = [int(c) for c in args.readers.split(",")]
    return {
        "writer_facts": facts,
        "append": {
            "sqlite": writers("sqlite", counts, facts, size=size, keep=kept, alone=False),
            "postgresql": writers(postgres.url, counts, facts, size=size, keep=kept, alone=False),
        },
        "append_log_alone": {
            "sqlite": writers("sqlite", counts, facts, size=size, keep=kept, alone=True),
            "postgresql": writers(postgres.url, counts, facts, size=size, keep=kept, alone=True),
        },
        "recall_bfs": {
            "sqlite": readers(sqlite, reading, settings, **asked),
            "postgresql": readers(postgres, reading, settings, **asked),
        },
    }


def issue_targets(sqlite: Run, postgres: Run) -> dict[str, dict[str, Any]]:
    """Issue 25's targets, measured: each with what was compared and whether it was met."""
    appends, alone = postgres["concurrency"]["append"], postgres["concurrency"]["append_log_alone"]
    most = max(appends["postgresql"], key=lambda r: r["writers"])
    [one] = [r for r in appends["sqlite"] if r["writers"] == 1]
    most_alone = max(alone["postgresql"], key=lambda r: r["writers"])
    [one_alone] = [r for r in alone["sqlite"] if r["writers"] == 1]
    ratios = {
        mode: postgres["recall"][mode]["p95_ms"] / sqlite["recall"][mode]["p95_ms"]
        for mode in sqlite["recall"]
    }
    as_of = max(a["p95_ms"] for a in postgres["as_of"].values())
    return {
        "append_many_writers": {
            "target": f"PostgreSQL with {most['writers']} writers >= SQLite with 1, events/s",
            "measured": [most["events_per_s"], one["events_per_s"]],
            "met": most["events_per_s"] >= one["events_per_s"],
        },
        "append_many_writers_log_alone": {
            "target": f"the log alone: PostgreSQL with {most_alone['writers']} writers >= "
            "SQLite with 1, events/s",
            "measured": [most_alone["events_per_s"], one_alone["events_per_s"]],
            "met": most_alone["events_per_s"] >= one_alone["events_per_s"],
        },
        "recall_p95_ratio": {
            "target": f"every recall mode's p95, PostgreSQL / SQLite <= {_RECALL_RATIO}",
            "measured": ratios,
            "met": max(ratios.values()) <= _RECALL_RATIO,
        },
        "as_of_p95_ms": {
            "target": f"as-of p95 on PostgreSQL (slowest of 3 forms) < {_AS_OF_MS} ms",
            "measured": as_of,
            "met": as_of < _AS_OF_MS,
        },
    }


def _writers(count: int, part: str = "append") -> Callable[[Run], str]:
    def cell(run: Run) -> str:
        found = [r for r in run[part] if r["writers"] == count]
        if not found:
            return "not run"
        if part != "append":
            return f"{found[0]['events_per_s']:,.0f} ev/s"
        return f"{found[0]['events_per_s']:,.0f} ev/s ({found[0]['facts_per_s']:,.0f} facts/s)"

    return cell


def _readers(count: int) -> Callable[[Run], str]:
    def cell(run: Run) -> str:
        found = [r for r in run["recall_bfs"] if r["readers"] == count]
        if not found:
            return "not run"
        r = found[0]
        return f"{r['p50_ms']:.1f} / {r['p95_ms']:.1f} ms ({r['recalls_per_s']:,.0f} recalls/s)"

    return cell


def _met(found: dict[str, Any]) -> str:
    return "met" if found["met"] else "**missed**"


def table(sqlite: Run, postgres: Run) -> list[list[str]]:
    """report.py's rows for both backends, then the many-process runs and the targets."""
    both = rows([sqlite, postgres])
    header = [f"{sqlite['size']:,} facts", "SQLite", "PostgreSQL"]
    concurrency = postgres["concurrency"]
    parts = ("append", "append_log_alone", "recall_bfs")
    backends = [{p: concurrency[p][b] for p in parts} for b in ("sqlite", "postgresql")]
    facts = concurrency["writer_facts"]
    counts = sorted({r["writers"] for r in concurrency["append"]["postgresql"]})
    extra = (
        [
            [
                f"append, batched, {count} writer(s), {facts:,} facts",
                *map(_writers(count), backends),
            ]
            for count in counts
        ]
        + [
            [
                f"the log alone, {count} writer(s), {facts:,} events",
                *map(_writers(count, "append_log_alone"), backends),
            ]
            for count in counts
        ]
        + [
            [f"recall BFS p50 / p95, {count} reader process(es)", *map(_readers(count), backends)]
            for count in sorted({r["readers"] for r in concurrency["recall_bfs"]["postgresql"]})
        ]
    )
    goals = postgres["issue_25_targets"]
    ratio = max(goals["recall_p95_ratio"]["measured"].values())
    writers_goal = goals["append_many_writers"]
    alone_goal = goals["append_many_writers_log_alone"]
    targets = [
        [
            f"target: {label}, most writers on PostgreSQL >= SQLite's 1 writer",
            f"{goal['measured'][1]:,.0f} ev/s",
            f"{goal['measured'][0]:,.0f} ev/s: {_met(goal)}",
        ]
        for label, goal in (("facade", writers_goal), ("log alone", alone_goal))
    ] + [
        [
            "target: recall p95 within 2x SQLite's (worst mode)",
            "",
            f"{ratio:.2f}x: {_met(goals['recall_p95_ratio'])}",
        ],
        [
            "target: as-of p95 < 10 ms (slowest form)",
            "",
            f"{goals['as_of_p95_ms']['measured']:.1f} ms: {_met(goals['as_of_p95_ms'])}",
        ],
    ]
    return [header, *both[1:], *extra, *targets]


def backend_machine(machine: dict[str, Any], url: str) -> dict[str, Any]:
    """The machine record with the PostgreSQL server and driver measured against."""
    with psycopg.connect(url) as connection:
        server = connection.execute("SHOW server_version").fetchone()
    return {
        **machine,
        "backend": str(locate(url)).removesuffix(" (schema apexmem)"),
        "postgresql": server[0] if server else "unknown",
        "psycopg": version("psycopg"),
    }


def beside_markdown(machine: dict[str, Any], sqlite: Run, postgres: Run) -> str:
    """The machine, the command and the table of both backends, in markdown."""
    cells = table(sqlite, postgres)
    text = markdown([postgres], machine).split("\n", 1)[0] + (
        f" PostgreSQL {machine['postgresql']} at {machine['backend']}, psycopg "
        f"{machine['psycopg']}.\n\n"
    )
    text += "| " + " | ".join(cells[0]) + " |\n" + "|---" * 3 + "|\n"
    return text + "".join("| " + " | ".join(row) + " |\n" for row in cells[1:])


def write_beside(folder: Path, machine: dict[str, Any], postgres: Run, text: str) -> Path:
    """<folder>/<date>-<size>.json (the PostgreSQL run) and .md (`text`: both backends)."""
    written = write_results(folder, machine, postgres)
    written.with_suffix(".md").write_text(text)
    return written
