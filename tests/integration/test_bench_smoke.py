"""`python -m bench --smoke`: the benchmark suite end to end at 300 facts, so it cannot rot.

Timings are never asserted; the suite's correctness checks (current versions and as-of
answers against the generator's ground truth) are.
"""

import json
from pathlib import Path

import pytest
from bench_scripts import run


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
