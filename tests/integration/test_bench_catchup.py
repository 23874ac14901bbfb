"""`python bench/catchup.py` end to end at a small size, so it cannot rot.

Timings are never asserted; what the figures are made of is: every event of the log it
wrote is applied, once per run, and the median comes from the runs listed beside it.
"""

import json
import sqlite3
from pathlib import Path
from statistics import median

from bench_scripts import run


def test_the_catch_up_bench_projects_the_whole_log_it_wrote_in_every_run(tmp_path: Path) -> None:
    done = run("bench/catchup.py", "--facts", "300", "--runs", "2", "--work", str(tmp_path))

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    with sqlite3.connect(tmp_path / "log-300-7" / "events.db") as log:
        (events,) = log.execute("SELECT max(rowid) FROM stored_events").fetchone()
    assert result["events"] == events
    assert len(result["seconds"]) == 2
    assert result["median_events_per_s"] == median(events / s for s in result["seconds"])
