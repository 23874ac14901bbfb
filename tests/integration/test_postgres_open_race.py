"""Processes opening one new PostgreSQL memory at the same moment (several `serve` or
`project` processes started together): every one opens it, the tables are laid out once."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from pg_schemas import postgres_schema

OPENERS = 6
# Each process waits for the same start moment, then opens the memory (the log, the read
# models and the vectors' tables) and writes one fact.
_OPEN = """
import sys, time
from apexmem import Memory
url, start, name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
time.sleep(max(0.0, start - time.time()))
with Memory.open(url) as memory:
    memory.assert_fact(subject=name, relation="likes", object="tea")
print("opened")
"""


def test_processes_opening_a_new_memory_together_all_open_it(tmp_path: Path) -> None:
    with postgres_schema("open_race") as url:
        start = time.time() + 8.0  # every process has imported apexmem by then
        openers = [
            subprocess.Popen(
                [sys.executable, "-c", _OPEN, url, str(start), f"agent{i}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=tmp_path,
            )
            for i in range(OPENERS)
        ]
        results = [p.communicate(timeout=120) for p in openers]
        failed = [err for p, (_, err) in zip(openers, results, strict=True) if p.returncode]
        assert failed == [], failed[0][-2000:]
        assert all(out.strip() == "opened" for out, _ in results)
        from apexmem import Memory

        with Memory.open(url) as memory:
            told = [memory.facts_about(f"agent{i}") for i in range(OPENERS)]
        assert [[f.object for f in facts] for facts in told] == [["tea"]] * OPENERS
