"""PostgreSQL restarted while writers run: what was acknowledged survives, and what was not is
retried by the client with its idempotency key and lands once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Final

import pytest
from pg_schemas import postgres_schema

from apexmem import Memory
from apexmem.events import FactAsserted
from apexmem.location import locate

WRITER: Final = Path(__file__).with_name("retrying_writer.py")
SETTINGS: Final = "[memory.vectors]\nenabled = false\n"
COUNT: Final = 150


def _restart_server() -> None:
    versions = sorted(os.listdir("/etc/postgresql"))
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "restart"],
        check=True, timeout=120, capture_output=True,
    )  # fmt: skip


@pytest.mark.slow  # restarts the PostgreSQL server under two writer processes
def test_a_server_restart_loses_no_acknowledged_write_and_retries_land_once(
    tmp_path: Path,
) -> None:
    with postgres_schema("restart") as url:
        cache = locate(url, cache=tmp_path / "cache").directory
        cache.mkdir(parents=True)
        (cache / "apexmem.toml").write_text(SETTINGS, encoding="utf-8")
        env = {**os.environ, "APEXMEM_CACHE": str(tmp_path / "cache")}
        with ExitStack() as files:
            error_files = [files.enter_context((tmp_path / f"{n}.err").open("w")) for n in "ab"]
            outputs, codes = _run_writers(url, env, error_files)
        errors = [(tmp_path / f"{n}.err").read_text()[-2000:] for n in "ab"]
        assert codes == [0, 0], errors
        acknowledged = dict(line.split() for out in outputs for line in out.splitlines())
        with Memory.open(locate(url, cache=tmp_path / "cache"), create=False) as memory:
            asserted = [e.data for e in memory.events(tags=["fact-asserted.v1"])]
            reinforced = list(memory.events(tags=["fact-reinforced.v1"]))
            report = memory.verify()
    sentences = Counter(e.fact for e in asserted if isinstance(e, FactAsserted))
    assert len(acknowledged) == 2 * COUNT
    assert {str(e.fact_id) for e in asserted if isinstance(e, FactAsserted)} >= set(
        acknowledged.values()
    )
    assert len(sentences) == 2 * COUNT
    assert set(sentences.values()) == {1}  # every write landed once, retries included
    assert reinforced == []  # a retry was recognized, never applied again
    assert report.ok


def _run_writers(
    url: str, env: dict[str, str], error_files: Sequence[IO[str]]
) -> tuple[list[str], list[int]]:
    """Two retrying writers, the server restarted under them: what each printed, and how
    each ended."""
    writers = [
        subprocess.Popen(
            [sys.executable, str(WRITER), url, name, str(COUNT)],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=env,
        )
        for name, errors in zip("ab", error_files, strict=True)
    ]
    for writer in writers:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"
    time.sleep(1.0)  # some writes acknowledged before the restart
    _restart_server()
    # Read through the file objects: readline() above may have buffered acknowledgements
    # already, which communicate() (reading the raw pipes) would skip.
    outputs = []
    for writer in writers:
        assert writer.stdout is not None
        with writer.stdout:
            outputs.append(writer.stdout.read())
    return outputs, [w.wait(timeout=300) for w in writers]
