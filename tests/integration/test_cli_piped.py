"""Output piped to another program (not a terminal) keeps each table row on one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]


def test_piped_tables_are_not_folded_at_80_columns_mid_word(tmp_path: Path) -> None:
    demo = subprocess.run(
        [*APEXMEM, "demo", "--db", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "80"},  # a terminal's width, exported: ignored on a pipe
    )

    assert demo.returncode == 0, demo.stderr
    rows = [line for line in demo.stdout.splitlines() if "fact-asserted.v1" in line]
    assert len(rows) == 3, demo.stdout
    assert "'Alice works at Acme' valid 2021-03-01 -> open, confidence 0.90, created" in rows[0]
    assert "'Alice worked at Initech' valid 2018-09-01 -> 2021-03-01" in rows[2]
    assert max(len(line) for line in demo.stdout.splitlines()) > 80
    assert "recorded_at" in demo.stdout  # a header folded at 80 columns reads "recorded_a"
