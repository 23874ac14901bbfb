"""A real, small filesystem to fill: a tmpfs mounted for one test (the tests run as root).

`fill` takes every byte left on it, as a full disk does; removing the filler frees them.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["fill", "small_disk"]


@contextmanager
def small_disk(where: Path, *, size: str = "8m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (created) for the block, unmounted after it."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.fail(
            f"cannot mount a small tmpfs (the disk-full tests run as root): {mounted.stderr}"
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", "--lazy", str(where)], check=True)


def fill(disk: Path) -> Path:
    """Write a file on `disk` until no byte is left; returns it (remove it to free the space)."""
    filler = disk / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for chunk in (1 << 16, 1 << 12, 1 << 9, 1):
            try:
                while True:
                    os.write(descriptor, b"\0" * chunk)
            except OSError as e:
                if e.errno != 28:  # ENOSPC: this chunk size no longer fits; try a smaller one
                    raise
    finally:
        os.close(descriptor)
    return filler
