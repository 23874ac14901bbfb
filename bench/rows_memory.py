"""What an HNSW index build holds in memory for its exact-rescoring rows: one process per
way, adding `--rows` float32 rows of `--dimension` in chunks of 5,000 as a build does.

    python bench/rows_memory.py [--rows 1000000] [--dimension 256]

Each way runs in a process of its own and prints its resident memory after the last row
and its peak: rows spilled to a temporary file past `vector_rows.SPILL_ROWS` (what a build
does), and the baseline in the same run, every row held in memory.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from apexmem.readmodels.vector_rows import SPILL_ROWS, ExactRows

_CHUNK = 5_000


def _resident_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def build(rows: int, dimension: int, spill_rows: int) -> dict[str, float]:
    """Add `rows` rows as a build does; the memory it held."""
    with tempfile.TemporaryDirectory() as directory:
        held = ExactRows(dimension, spill_to=Path(directory), spill_rows=spill_rows)
        matrix = np.random.default_rng(7).random((_CHUNK, dimension), dtype=np.float32)
        for start in range(0, rows, _CHUNK):
            ids = np.arange(start, min(rows, start + _CHUNK))
            held.add(ids, matrix[: len(ids)])
        resident = _resident_mib()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"resident_mib": round(resident, 1), "peak_mib": round(peak, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dimension", type=int, default=256)
    parser.add_argument("--spill-rows", type=int, help=argparse.SUPPRESS)  # one way, in a child
    args = parser.parse_args(argv)
    if args.spill_rows is not None:
        print(json.dumps(build(args.rows, args.dimension, args.spill_rows)))
        return 0
    for name, spill in (("spilled", SPILL_ROWS), ("held (baseline)", args.rows + 1)):
        command = [sys.executable, __file__, "--rows", str(args.rows)]
        command += ["--dimension", str(args.dimension), "--spill-rows", str(spill)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        figures = json.loads(done.stdout)
        resident, peak = figures["resident_mib"], figures["peak_mib"]
        print(f"{args.rows:,} rows x {args.dimension}, {name}: resident ", end="")
        print(f"{resident:,.0f} MiB after the last row, peak {peak:,.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
