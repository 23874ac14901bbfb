"""Holding off Python's cyclic garbage collector while a large write batch is decided.

CPython runs a collection every 700 container allocations, and every so often one that walks
every tracked object of the process. A batch of a thousand facts allocates tens of
thousands of containers, and a writer's caches hold hundreds of thousands of tracked
objects (every UUID is one), so those full collections took about a tenth of a batched
append's time. The write path allocates no reference cycles worth collecting at once, so
it pauses the collector for a large batch and restores it afterwards, as Mercurial does
around its own allocation-heavy loops (`util.nogc`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused"]


@contextmanager
def paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block when it was enabled, then enable it.

    The collector's switch is the process's: a thread that disables it while another is
    inside this block finds it enabled again when the block ends.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
