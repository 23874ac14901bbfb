"""The suite's figures as a table (one column per size), the targets, and the results files."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from rich.console import Console
from rich.table import Table

__all__ = ["rows", "summarize", "targets", "write_results"]

_GB: Final = 2**30
_TARGETS: Final = {
    "ingest_and_projection_s": 15 * 60,
    "recall_bfs_p95_ms": 50.0,
    "as_of_p95_ms": 20.0,
    "peak_rss_bytes": 3 * _GB,
}
Run = dict[str, Any]


def targets(run: Run) -> dict[str, dict[str, Any]]:
    """The issue's targets (set for 1,000,000 facts on 2 cores), checked at this size."""
    append, projection = run["append"], run["projection"]
    measured = {
        "ingest_and_projection_s": append["batched"]["seconds"]
        + append["single"]["seconds"]
        + projection["with_embeddings"]["seconds"],
        "recall_bfs_p95_ms": run["recall"]["bfs"]["p95_ms"],
        "as_of_p95_ms": run["as_of"]["valid_at+known_at"]["p95_ms"],
        "peak_rss_bytes": max(
            append["peak_rss_bytes"], projection["peak_rss_bytes"], run["peak_rss_bytes"]
        ),
    }
    return {
        name: {"target": limit, "measured": measured[name], "met": measured[name] <= limit}
        for name, limit in _TARGETS.items()
    }


def _ms(figures: dict[str, Any], *keys: str) -> str:
    return " / ".join(f"{figures[k]:.1f}" for k in keys) + " ms"


def _percentiles(figures: dict[str, Any]) -> str:
    return _ms(figures, "p50_ms", "p95_ms", "p99_ms")


def _rate(figures: dict[str, Any]) -> str:
    return f"{figures['events_per_s']:,.0f} ev/s ({figures['seconds']:,.1f} s)"


def _mib(count: float) -> str:
    return f"{count / 2**20:,.0f} MiB"


def _share(check: dict[str, Any], total: str) -> str:
    return f"{check['correct']:,}/{check[total]:,}"


def _as_of(run: Run, axes: str) -> str:
    return _ms(run["as_of"][axes], "p50_ms", "p95_ms")


def _as_of_shares(run: Run) -> str:
    return ", ".join(_share(a, "probes") for a in run["as_of"].values())


def _naive(run: Run) -> str:
    naive = run.get("naive")
    if naive is None:
        return "not run"
    agree = "same answers" if naive["answers_equal"] else "DIFFERENT answers"
    return f"{naive['p50_ms']:,.0f} ms ({naive['ratio_to_read_model_p50']:,.0f}x), {agree}"


def _vectors(run: Run) -> str:
    v = run["vectors"]
    return (
        f"{v['faiss']['p50_ms']:.2f} / {v['scan']['p50_ms']:,.0f} ms "
        f"({v['speedup_p50']:,.0f}x, {v['index']}, recall@10 {v['recall_at_10']:.2f})"
    )


def _ceilings(run: Run) -> dict[str, tuple[float, float] | None]:
    """(rows/s, batched share) of both raw ceilings. Runs before 2026-11-21 measured only the
    ascending-key ceiling, under the name `raw_sqlite`; runs on PostgreSQL measure none."""
    append = run["append"]
    rate = append["batched"]["events_per_s"]
    if "raw_sqlite" not in append:  # a PostgreSQL log
        return {"same": None, "sequential": None}
    if "raw_sqlite_sequential_keys" not in append:
        old = append["raw_sqlite"]["rows_per_s"]
        return {"same": None, "sequential": (old, rate / old)}
    same = append["raw_sqlite"]["rows_per_s"]
    sequential = append["raw_sqlite_sequential_keys"]["rows_per_s"]
    return {"same": (same, rate / same), "sequential": (sequential, rate / sequential)}


def _ceiling(run: Run, kind: str, *, share: bool = False) -> str:
    """A ceiling's rows/s, or with `share` the batched rate's share of it."""
    found = _ceilings(run)[kind]
    if found is None:
        return "not measured"
    return f"{found[1]:.2f}" if share else f"{found[0]:,.0f}"


def _inline(run: Run) -> str:
    """The inline run's rate and percentiles; runs before 2026-11-27 wrote into a new memory
    of 1,000 facts in the writer process (under `append`) and kept the rate alone."""
    found = run.get("single_inline", run["append"].get("single_inline"))
    if found is None:
        return "not run"
    rate = f"{found['facts_per_s']:,.0f} facts/s"
    return rate + (f", {_percentiles(found)}" if "p99_ms" in found else " (a new memory)")


SPEED_TARGETS: Final[tuple[tuple[str, frozenset[int], Callable[[Run], float], float], ...]] = (
    # (what, the sizes it is set for, the figure, its bound: an upper one when positive,
    # a lower one when negative). Issue 31's, for 2 cores.
    (
        "end to end <= 300 s",
        frozenset({1_000_000}),
        lambda r: r["targets"]["ingest_and_projection_s"]["measured"],
        300.0,
    ),
    (
        "catch-up, graph >= 50,000 ev/s",
        frozenset({1_000_000}),
        lambda r: r["projection"]["graph"]["events_per_s"],
        -50_000.0,
    ),
    (
        "full rebuild <= 240 s",
        frozenset({1_000_000}),
        lambda r: r["projection"]["rebuild"]["seconds"],
        240.0,
    ),
    ("recall BFS p95 <= 5 ms", frozenset({10_000}), lambda r: r["recall"]["bfs"]["p95_ms"], 5.0),
    (
        "recall BFS p95 <= 15 ms",
        frozenset({1_000_000}),
        lambda r: r["recall"]["bfs"]["p95_ms"],
        15.0,
    ),
    (
        "recall activation p95 <= 50 ms",
        frozenset({1_000_000}),
        lambda r: r["recall"]["activation"]["p95_ms"],
        50.0,
    ),
    (
        "batched share of the log's rows ceiling >= 0.4",
        frozenset({10_000, 100_000, 1_000_000}),
        lambda r: (_ceilings(r)["same"] or (0.0, 0.0))[1],
        -0.4,
    ),
    (
        "inline single write >= 400 facts/s",
        frozenset({1_000_000}),
        lambda r: r["single_inline"]["facts_per_s"],
        -400.0,
    ),
    (
        "inline single write p99 <= 10 ms",
        frozenset({1_000_000}),
        lambda r: r["single_inline"]["p99_ms"],
        10.0,
    ),
)


def _speed_target(label: str) -> Callable[[Run], str]:
    def cell(run: Run) -> str:
        _, sizes, figure, bound = next(t for t in SPEED_TARGETS if t[0] == label)
        if run["size"] not in sizes:
            return "-"
        try:
            measured = figure(run)
        except (KeyError, TypeError):
            return "not measured"
        met = measured <= bound if bound > 0 else measured >= -bound
        return "met" if met else "**missed**"

    return cell


def _target(name: str) -> Callable[[Run], str]:
    def cell(run: Run) -> str:
        found = run["targets"][name]
        return "met" if found["met"] else "**missed**"

    return cell


_ROWS: Final[tuple[tuple[str, Callable[[Run], str]], ...]] = (
    ("events in the log", lambda r: f"{r['append']['events']:,}"),
    ("append, batched (1,000 items)", lambda r: _rate(r["append"]["batched"])),
    ("append, batched, facts/s", lambda r: f"{r['append']['batched']['facts_per_s']:,.0f}"),
    ("append, one fact each, p50 / p95 / p99", lambda r: _percentiles(r["append"]["single"])),
    ("raw SQLite ceiling, the log's rows, rows/s", lambda r: _ceiling(r, "same")),
    ("batched as a share of that ceiling", lambda r: _ceiling(r, "same", share=True)),
    ("raw SQLite ceiling, ascending keys, rows/s", lambda r: _ceiling(r, "sequential")),
    ("batched as a share of that ceiling", lambda r: _ceiling(r, "sequential", share=True)),
    ("one fact each with inline projection, into this memory", _inline),
    ("catch-up, graph (no embeddings)", lambda r: _rate(r["projection"]["graph"])),
    ("catch-up, vectors (embedding)", lambda r: _rate(r["projection"]["vectors"])),
    ("FAISS index, tail after the vectors", lambda r: f"{r['projection']['faiss_index_s']:,.0f} s"),
    ("catch-up with embeddings", lambda r: _rate(r["projection"]["with_embeddings"])),
    ("full rebuild", lambda r: _rate(r["projection"]["rebuild"])),
    (
        "ingest + projection, end to end",
        lambda r: f"{r['targets']['ingest_and_projection_s']['measured']:,.0f} s",
    ),
    ("recall BFS p50 / p95 / p99", lambda r: _percentiles(r["recall"]["bfs"])),
    ("recall activation", lambda r: _percentiles(r["recall"]["activation"])),
    ("recall BFS, valid_at + known_at", lambda r: _percentiles(r["recall"]["bfs_as_of"])),
    (
        "recall activation, valid_at + known_at",
        lambda r: _percentiles(r["recall"]["activation_as_of"]),
    ),
    ("as-of facts_about, both axes, p50 / p95", lambda r: _as_of(r, "valid_at+known_at")),
    ("as-of facts_about, valid_at only", lambda r: _as_of(r, "valid_at")),
    ("as-of facts_about, known_at only", lambda r: _as_of(r, "known_at")),
    ("naive full replay p50 (x read model)", _naive),
    ("vector search FAISS / full scan p50", _vectors),
    ("peak RSS, writer", lambda r: _mib(r["append"]["peak_rss_bytes"])),
    ("peak RSS, projector", lambda r: _mib(r["projection"]["peak_rss_bytes"])),
    ("peak RSS, reader", lambda r: _mib(r["peak_rss_bytes"])),
    ("bytes per fact, log", lambda r: f"{r['disk']['log_bytes_per_fact']:,.0f}"),
    ("bytes per fact, read models", lambda r: f"{r['disk']['readmodel_bytes_per_fact']:,.0f}"),
    ("correct current versions", lambda r: _share(r["current_versions"], "slots")),
    ("correct as-of answers (3 forms)", _as_of_shares),
    ("target: ingest + projection <= 15 min", _target("ingest_and_projection_s")),
    ("target: recall BFS p95 <= 50 ms", _target("recall_bfs_p95_ms")),
    ("target: as-of p95 <= 20 ms", _target("as_of_p95_ms")),
    ("target: peak RSS <= 3 GB", _target("peak_rss_bytes")),
    *((f"speed target: {label}", _speed_target(label)) for label, _, _, _ in SPEED_TARGETS),
    ("load average before / after", lambda r: "{before} / {after}".format(**r["load_average"])),
)


def rows(runs: Sequence[Run]) -> list[list[str]]:
    """The table: a header row of sizes, then one row per measurement."""
    header = ["facts", *(f"{r['size']:,}" for r in runs)]
    return [header, *([label, *(cell(r) for r in runs)] for label, cell in _ROWS)]


def markdown(runs: Sequence[Run], machine: dict[str, Any]) -> str:
    """The table in markdown, after the machine and the command."""
    table = rows(runs)
    lines = [
        f"`{machine['command']}` on {machine['cpus']} cores, {machine['memory_gb']} GB, "
        f"Python {machine['python']}, SQLite {machine['sqlite']}, "
        + ", ".join(f"{p} {machine[p]}" for p in _PACKAGES if p in machine)
        + f"; apexmem {machine['apexmem_commit']}"
        + (" with uncommitted changes" if machine["apexmem_uncommitted_changes"] else "")
        + f"; embedder {machine['embedder']}.",
        "",
        "| " + " | ".join(table[0]) + " |",
        "|---" * len(table[0]) + "|",
        *("| " + " | ".join(row) + " |" for row in table[1:]),
    ]
    return "\n".join(lines) + "\n"


_PACKAGES: Final = ("eventsourcing", "sqlalchemy", "msgspec", "faiss-cpu", "numpy", "wordllama")


def summarize(machine: dict[str, Any], runs: Sequence[Run]) -> str:
    """Print the table to the terminal; returns the same table in markdown."""
    table = rows(runs)
    shown = Table(*table[0], title="apexmem benchmark suite")
    for row in table[1:]:
        shown.add_row(*(cell.replace("**", "") for cell in row))
    Console().print(shown)
    return markdown(runs, machine)


def write_results(folder: Path, machine: dict[str, Any], run: Run) -> Path:
    """bench/results/<date>-<size>.json and .md, and summary.md over the newest of each size."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{machine['date']}-{run['size']}"
    data = {"machine": machine, **run}
    stem.with_suffix(".json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    stem.with_suffix(".md").write_text(markdown([run], machine))
    newest: dict[int, dict[str, Any]] = {}
    for path in sorted(folder.glob("*-*.json")):
        found = json.loads(path.read_text())
        if isinstance(found, dict) and "size" in found and "targets" in found:
            newest[found["size"]] = found  # sorted by date: the last one of a size wins
    ordered = [newest[s] for s in sorted(newest)]
    (folder / "summary.md").write_text(
        "# apexmem benchmark suite: the newest run of each size\n\n"
        + "\n".join(f"- {r['size']:,} facts: {r['machine']['command']}" for r in ordered)
        + "\n\n"
        + markdown(ordered, machine)
    )
    return stem.with_suffix(".json")
