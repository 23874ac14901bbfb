"""A forget killed with SIGKILL at one of two points, for the crash tests of test_forget.py.

Usage: python killed_forget_process.py DIR MODE
- `blanked`: records blanked under the write lock, killed before the commit;
- `committed`: the erasure committed, killed before its clean-up (rebuild and scrub).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events.log import LockedEventLog
from apexmem.service.forgetting import Forgetting


def _killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(directory: str, mode: str) -> None:
    """Open the memory in `directory` and forget Priya Shah, killed at `mode`'s point."""
    memory = Memory.open(Path(directory), embedder=HashingEmbedder())
    if mode == "blanked":
        with memory.log.locked() as locked:
            assert isinstance(locked, LockedEventLog)
            locked.blank(range(1, locked.last_position() + 1))
            _killed()
    pipeline = memory._pipeline  # the crash point is inside the operation
    forgetting = Forgetting(memory.log, pipeline, memory.store, clean_up=_killed)
    forgetting.forget(entity="Priya Shah", entity_type="person", reason="request #123")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
