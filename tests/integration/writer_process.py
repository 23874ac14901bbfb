"""A writer for the concurrency and crash tests: appends facts and prints each acknowledged id.

Usage: python writer_process.py DIR NAME COUNT (it prints "ready", then starts once DIR/go exists)
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from apexmem import Memory


def main(directory: str, name: str, count: int) -> None:
    """Assert `count` facts about one shared entity; print `fact_id outcome` per ack."""
    start = datetime(2020, 1, 1, tzinfo=UTC)
    with Memory.open(directory) as memory:
        print("ready", flush=True)
        go = Path(directory) / "go"
        while not go.exists():  # a start line, so racing writers really overlap
            time.sleep(0.001)
        for i in range(count):
            ref = memory.assert_fact(
                subject="Shared Person",
                subject_type="person",
                relation="knows",
                object=f"{name} friend {i}",
                object_type="person",
                actor=name,
                valid_from=start + timedelta(days=i),
            )
            employer = memory.assert_fact(
                subject="Shared Person",
                subject_type="person",
                relation="works_at",
                object=f"{name} employer {i}",
                object_type="organization",
                actor=name,
                valid_from=start + timedelta(days=i, hours=1 if name == "a" else 2),
            )
            print(ref.fact_id, ref.outcome, employer.fact_id, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
