"""A writer for the concurrency and crash tests: appends facts and prints each acknowledged id.

Usage: python writer_process.py PLACE NAME COUNT [START_DIR]: PLACE is a memory directory or a
PostgreSQL URL; it prints "ready", then starts once START_DIR/go exists (START_DIR defaults to
PLACE, which must then be a directory).
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from apexmem import Memory


def main(place: str, name: str, count: int, start_dir: str | None = None) -> None:
    """Assert `count` facts about one shared entity; print `fact_id outcome` per ack."""
    start = datetime(2020, 1, 1, tzinfo=UTC)
    with Memory.open(place) as memory:
        print("ready", flush=True)
        go = Path(start_dir or place) / "go"
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
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:5])
