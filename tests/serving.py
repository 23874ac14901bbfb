"""Running the CLI's servers as real processes in tests: ports, the token, start and stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import httpx

__all__ = ["AUTH", "CLI", "TOKEN", "free_port", "make_memory", "running"]

TOKEN: Final = "process-token-0123456789"
AUTH: Final = {"Authorization": f"Bearer {TOKEN}"}
CLI: Final = [sys.executable, "-c", "from apexmem.cli import main; main()"]


def free_port() -> int:
    """A port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def make_memory(tmp_path: Path) -> Path:
    """A memory directory with the hashing embedder."""
    directory = tmp_path / "mem"
    directory.mkdir()
    (directory / "apexmem.toml").write_text(
        '[memory.vectors]\nembedder = "hashing"\n', encoding="utf-8"
    )
    return directory


@contextmanager
def running(
    *args: str, ready: str | None, log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """The CLI with `args` in its own process until `ready` answers (not waited for when
    None); stopped with SIGINT. `env` adds to the environment; its stderr goes to `log`.
    """
    env = {**os.environ, "APEXMEM_TOKEN": TOKEN, **(env or {})}
    with log.open("wb") as errors:
        process = subprocess.Popen(
            [*CLI, *args], env=env, stdin=subprocess.DEVNULL, stdout=errors, stderr=errors
        )
    try:
        deadline = time.monotonic() + 180  # a loaded 2-core machine starts workers slowly
        while ready is not None:
            assert process.poll() is None, log.read_text(encoding="utf-8")
            try:
                httpx.get(ready, headers=AUTH, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        yield process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
