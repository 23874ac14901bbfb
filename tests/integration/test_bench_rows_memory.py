"""`python bench/rows_memory.py` on a few rows, so it cannot rot: both ways are built in
processes of their own and their memory printed (figures are never asserted)."""

import re

from bench_scripts import run


def test_the_rows_memory_bench_prints_both_ways() -> None:
    done = run("bench/rows_memory.py", "--rows", "20000", "--dimension", "8")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    ways = [re.search(r"x 8, (.+): resident", line) for line in lines]
    assert [way.group(1) if way else None for way in ways] == ["spilled", "held (baseline)"]
    assert all("MiB after the last row, peak" in line for line in lines)
