"""`python bench/statement_times.py` on a small memory of the suite's workload, so it cannot
rot: every recall it asks is timed, and its statements are all counted, the slowest
recalls apart (times are never asserted)."""

import re
from pathlib import Path

from bench_scripts import run


def test_the_statement_times_bench_counts_every_statement_of_each_recall(tmp_path: Path) -> None:
    memory = tmp_path / "mem"
    made = run(  # the workload bench/pg_read_models.py builds, at 300 facts
        "-c",
        "import sys; sys.path.insert(0, 'bench'); from recall import project, write_log; "
        f"write_log({str(memory)!r}, 300, 7, 'hashing'); project({str(memory)!r}, 'hashing')",
    )
    assert made.returncode == 0, made.stderr[-3000:]

    done = run(
        "bench/statement_times.py", str(memory),
        "--size", "300", "--queries", "8", "--embedder", "hashing", "--tail", "0.25",
    )  # fmt: skip

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    tail = lines.index("the slowest 2:")
    (head, *families), slowest = lines[:tail], lines[tail + 1 :]
    questions = [re.match(r" *[\d.]+ ms \(SQL [\d.]+\)  \S", line) for line in slowest[:2]]
    assert all(questions)  # each of the two slowest, then where their time went
    assert all(re.match(r" *[\d.]+ ms  \S", line) for line in slowest[2:]) and slowest[2:]
    assert head.startswith("bfs: 8 recalls, p50 ")
    sql, mean = map(float, re.findall(r"SQL ([\d.]+) of ([\d.]+) ms", head)[0])
    assert 0 < sql <= mean
    counted = {line.split("x  ", 1)[1]: float(line.split()[2][:-1]) for line in families}
    assert any("facts_fts" in name for name in counted)  # full text asked each time
    assert all(count > 0 for count in counted.values())
