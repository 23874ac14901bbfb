"""`python -m bench --smoke`: the benchmark suite end to end at 300 facts, so it cannot rot;
with `--backend`, on PostgreSQL too, beside SQLite.

Timings are never asserted; the suite's correctness checks (current versions and as-of
answers against the generator's ground truth) are.
"""

import json
from pathlib import Path

import psycopg
import pytest
from bench_scripts import run
from storage_backends import POSTGRES_URL


@pytest.mark.slow
def test_the_smoke_run_passes_every_correctness_check_and_writes_its_results(
    tmp_path: Path,
) -> None:
    done = run("-m", "bench", "--smoke", "--out", str(tmp_path))

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [written] = tmp_path.glob("*-300.json")
    result = json.loads(written.read_text())
    assert result["correct"] is True
    assert result["current_versions"]["share"] == 1.0
    assert result["current_versions"]["slots"] > 0
    assert {axes: a["share"] for axes, a in result["as_of"].items()} == {
        "valid_at+known_at": 1.0,
        "valid_at": 1.0,
        "known_at": 1.0,
    }
    assert result["naive"]["answers_equal"] is True
    assert (tmp_path / "summary.md").read_text().count("| 300 |") == 1


@pytest.mark.slow  # the suite on both backends, then 12 runs of 1 or 2 processes each
def test_the_smoke_run_on_postgresql_passes_every_check_beside_sqlite_and_drops_its_schema(
    tmp_path: Path,
) -> None:
    done = run(
        "-m", "bench", "--smoke", "--backend", POSTGRES_URL, "--out", str(tmp_path),
        "--writers", "1,2", "--readers", "1,2", timeout=900,
    )  # fmt: skip

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [sqlite] = tmp_path.glob("*-300.json")
    [written] = (tmp_path / "postgresql").glob("*-300.json")
    assert json.loads(sqlite.read_text())["correct"] is True
    result = json.loads(written.read_text())
    assert result["backend"] == "postgresql"
    assert result["correct"] is True
    assert result["current_versions"]["slots"] > 0
    assert {a["share"] for a in result["as_of"].values()} == {1.0}
    assert result["naive"]["answers_equal"] is True
    concurrency = result["concurrency"]
    for backend in ("sqlite", "postgresql"):
        for part in ("append", "append_log_alone"):
            appended = concurrency[part][backend]
            assert [r["writers"] for r in appended] == [1, 2]
            assert all(r["facts"] > 0 and r["events"] >= r["facts"] for r in appended)
        recalled = concurrency["recall_bfs"][backend]
        assert [(r["readers"], r["recalls"]) for r in recalled] == [(1, 20), (2, 40)]
    assert set(result["issue_25_targets"]) == {
        "append_many_writers",
        "append_many_writers_log_alone",
        "recall_p95_ratio",
        "as_of_p95_ms",
    }
    table = written.with_suffix(".md").read_text()
    assert "| 300 facts | SQLite | PostgreSQL |" in table
    assert "recall BFS p50 / p95, 2 reader process(es)" in table
    with psycopg.connect(POSTGRES_URL) as connection:
        left = connection.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
            (f"{result['schema']}%",),
        ).fetchall()
    assert left == []
