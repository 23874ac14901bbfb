"""A batch writer for the checkpoint crash test: appends batches, prints each acknowledged id.

Usage: python batch_writer_process.py DIR BATCH (it prints "ready", then writes until killed)
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec

from apexmem import Memory, Settings

LOG_ONLY = msgspec.convert({"memory": {"projection": {"inline": False}}}, Settings)


def main(directory: str, batch: int) -> None:
    """Assert batches of `batch` facts forever; print one line of fact ids per batch."""
    start = datetime(2020, 1, 1, tzinfo=UTC)
    with Memory.open(Path(directory), settings=LOG_ONLY) as memory:
        print("ready", flush=True)
        n = 0
        while True:
            facts = [
                {
                    "subject": f"person {(n + i) % 997}",
                    "subject_type": "person",
                    "relation": "knows",
                    "object": f"person {n + i + 1_000}",
                    "object_type": "person",
                    "valid_from": start + timedelta(minutes=n + i),
                }
                for i in range(batch)
            ]
            refs = memory.assert_facts(facts)
            n += batch
            print(" ".join(str(r.fact_id) for r in refs), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
