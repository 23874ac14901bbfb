"""A writer that retries each write with its idempotency key until it is acknowledged.

Usage: python retrying_writer.py URL NAME COUNT: prints "ready", then one line per
acknowledged write (`<name>-<i> <fact_id>`), retrying through server restarts.
"""

from __future__ import annotations

import sys
import time

from apexmem import ApexmemError, Memory

RETRY_FOR_S = 120.0


def main(url: str, name: str, count: int) -> None:
    """Assert `count` facts, each under its own idempotency key, retried until acknowledged."""
    with Memory.open(url) as memory:
        print("ready", flush=True)
        for i in range(count):
            key = f"{name}-{i}"
            deadline = time.monotonic() + RETRY_FOR_S
            while True:
                try:
                    ref = memory.assert_fact(
                        subject=f"Writer {name}", subject_type="person", relation="knows",
                        object=f"{name} friend {i}", object_type="person", idempotency_key=key,
                    )  # fmt: skip
                    break
                except ApexmemError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            print(key, ref.fact_id, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
