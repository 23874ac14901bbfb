"""`python bench/recall_beside.py` on two small memories of the suite's workload, one on
SQLite and one on PostgreSQL, so it cannot rot: every round asks every mode of both, the
places taking turns (times are never asserted)."""

import json
import re
from pathlib import Path

from bench_scripts import run
from pg_schemas import postgres_schema


def _made(place: str) -> None:
    made = run(  # the workload bench/pg_read_models.py builds, at 300 facts
        "-c",
        "import sys; sys.path.insert(0, 'bench'); from recall import project, write_log; "
        f"write_log({place!r}, 300, 7, 'hashing'); project({place!r}, 'hashing')",
    )
    assert made.returncode == 0, made.stderr[-3000:]


def test_the_recall_beside_bench_asks_both_places_in_turns(tmp_path: Path) -> None:
    memory, out = str(tmp_path / "mem"), tmp_path / "timings.json"
    with postgres_schema("beside") as url:
        _made(memory)
        _made(url)
        done = run(
            "bench/recall_beside.py", memory, url, "--size", "300", "--queries", "6",
            "--rounds", "2", "--embedder", "hashing", "--out", str(out),
        )  # fmt: skip

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    asked = [re.match(r"round (\d) (\w+) +(\w+) ", line) for line in lines[:-4]]
    order = [(m.group(1), m.group(2), m.group(3)) for m in asked if m]
    assert len(order) == 16  # 2 rounds x 4 modes x 2 places
    assert order[:2] == [("1", "bfs", "sqlite"), ("1", "bfs", "postgresql")]
    assert order[8:10] == [("2", "bfs", "postgresql"), ("2", "bfs", "sqlite")]
    summaries = lines[-4:]
    assert [s.split()[0] for s in summaries] == ["bfs", "activation", "bfs_as_of",
                                                 "activation_as_of"]  # fmt: skip
    assert all(re.search(r"postgresql p95 [\d.]+ ms: [\d.]+x \([\d.]+, [\d.]+\)", s)
               for s in summaries)  # fmt: skip
    timings = json.loads(out.read_text())
    assert {len(runs) for by_place in timings.values() for runs in by_place.values()} == {2}
    assert all(r["queries"] == 6 for by in timings.values() for rs in by.values() for r in rs)
