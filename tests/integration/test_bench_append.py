"""`python bench/append.py` end to end at a small size, so it cannot rot.

Timings are never asserted; what the figures are made of is: each ceiling inserts exactly
the rows the batched run logged, in as many transactions, and the reported median run and
shares come from the runs listed beside them.
"""

import json
import sqlite3
from pathlib import Path

import pytest
from bench_scripts import load, run

bench = load("append")


@pytest.mark.slow
def test_the_append_bench_writes_the_median_run_and_every_run(tmp_path: Path) -> None:
    out = tmp_path / "append.json"
    sizes = ["--facts", "1500", "--single", "60", "--inline", "20", "--runs", "3"]
    done = run("bench/append.py", *sizes, "--out", str(out))

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    runs = result["every_run"]
    assert result["runs"] == 3
    assert all(len(figures) == 3 for figures in runs.values())
    rates = sorted(runs["batched_events_per_s"])
    assert result["batched"]["events_per_s"] == rates[1]
    assert result["batched"]["facts"] == 1500
    assert result["raw_sqlite"]["rows"] == result["batched"]["events"]
    assert result["raw_sqlite_sequential_keys"]["rows"] == result["batched"]["events"]
    assert result["batched_share_of_raw"] == sorted(runs["share_of_raw"])[1]
    assert result["single"]["facts_per_s"] == sorted(runs["single_facts_per_s"])[1]
    assert result["single_inline"]["facts"] == 20


def test_the_ceilings_insert_the_log_s_rows_in_its_transactions(tmp_path: Path) -> None:
    run = bench.batched(bench.workload(300, seed=3), tmp_path / "log", 100)

    found = bench.ceilings(tmp_path / "log" / "events.db", run["ends"], tmp_path, keep=True)

    logged = _rows(tmp_path / "log" / "events.db", _LOGGED)
    copied = _rows(tmp_path / "raw_sqlite" / "raw.db", "SELECT * FROM events")
    ascending = _rows(tmp_path / "raw_sqlite_sequential_keys" / "raw.db", "SELECT * FROM events")
    assert len(run["ends"]) == 3 and run["ends"][-1] == run["events"]
    assert found["raw_sqlite"]["rows"] == found["raw_sqlite_sequential_keys"]["rows"]
    assert found["raw_sqlite"]["rows"] == run["events"]
    assert logged == copied
    assert [row[0] for row in ascending] == [f"{n:032x}" for n in range(run["events"])]


def test_the_ceilings_leave_no_files_behind(tmp_path: Path) -> None:
    run = bench.batched(bench.workload(100, seed=4), tmp_path / "log", 100)

    bench.ceilings(tmp_path / "log" / "events.db", run["ends"], tmp_path)

    assert sorted(p.name for p in tmp_path.iterdir()) == ["log"]


_LOGGED = "SELECT originator_id, originator_version, topic, state FROM stored_events"


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute(sql + " ORDER BY rowid").fetchall()
    finally:
        connection.close()
