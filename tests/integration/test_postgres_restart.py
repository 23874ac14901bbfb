"""PostgreSQL restarted while writers run: what was acknowledged survives, and what was not is
retried by the client with its idempotency key and lands once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Final

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
        writers = [
            subprocess.Popen(
                [sys.executable, str(WRITER), url, name, str(COUNT)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for name in ("a", "b")
        ]
        for writer in writers:
            assert writer.stdout is not None
            assert writer.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # some writes acknowledged before the restart
        _restart_server()
        outputs = [w.communicate(timeout=300) for w in writers]
        assert [w.returncode for w in writers] == [0, 0], [e[-2000:] for _, e in outputs]
        acknowledged = dict(line.split() for out, _ in outputs for line in out.splitlines())
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
