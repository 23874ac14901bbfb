"""Load on the HTTP API: concurrent clients appending and recalling over loopback, bounded in time.

Run from the repository root:  python bench/load.py [--clients 16] [--seconds 20]
Writes bench/results/load.json; the README's "HTTP API and MCP server" section quotes it.

`apexmem serve` runs in its own process on a free loopback port over a fresh memory with
the default settings (WordLlama vectors, inline projection). Each client is a thread with
its own connection; half of its requests append one fact (with an Idempotency-Key, retried
with the same key after a transport error), half recall. Afterwards the log is read back:
every acknowledged write must be in it, at the position acknowledged, and no other fact.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx

from apexmem import Memory
from apexmem.events import FactAsserted

RESULTS = Path(__file__).parent / "results" / "load.json"
_ORGS = 50
_RETRIES = 3


class Tally:
    """What the clients saw: latencies per operation, acknowledged writes, failures."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = {"append": [], "recall": []}
        self.acknowledged: dict[str, int] = {}
        """fact id -> log position, as the server acknowledged them."""
        self.failures: list[str] = []
        self.retries = 0


def _client(base: str, token: str, number: int, stop_at: float, tally: Tally) -> None:
    rng = random.Random(number)
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
        sent = 0
        while time.monotonic() < stop_at:
            sent += 1
            if rng.random() < 0.5:
                _append(http, number, sent, tally)
            else:
                _recall(http, rng, tally)


def _append(http: httpx.Client, number: int, sent: int, tally: Tally) -> None:
    fact = {
        "subject": f"person {number:02d}-{sent:06d}",
        "subject_type": "person",
        "relation": "works_at",
        "object": f"organization {sent % _ORGS:02d}",
        "object_type": "organization",
        "actor": f"client-{number}",
    }
    key = {"Idempotency-Key": f"load-{number}-{sent}"}
    for attempt in range(_RETRIES):
        started = time.perf_counter()
        try:
            response = http.post("/v1/facts", json={"facts": [fact]}, headers=key)
        except httpx.TransportError as e:
            with tally.lock:
                tally.retries += 1
                if attempt == _RETRIES - 1:
                    tally.failures.append(f"append {key}: {e!r}")
            continue
        elapsed = time.perf_counter() - started
        with tally.lock:
            if response.status_code != 200:
                tally.failures.append(f"append {response.status_code}: {response.text[:200]}")
                return
            [result] = response.json()["results"]
            tally.acknowledged[result["fact_id"]] = result["position"]
            tally.latencies["append"].append(elapsed)
        return


def _recall(http: httpx.Client, rng: random.Random, tally: Tally) -> None:
    query = f"Who works at organization {rng.randrange(_ORGS):02d}?"
    started = time.perf_counter()
    try:
        response = http.post("/v1/recall", json={"query": query, "limit": 10})
    except httpx.TransportError as e:
        with tally.lock:
            tally.failures.append(f"recall: {e!r}")
        return
    elapsed = time.perf_counter() - started
    with tally.lock:
        if response.status_code != 200:
            tally.failures.append(f"recall {response.status_code}: {response.text[:200]}")
            return
        tally.latencies["recall"].append(elapsed)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start(directory: Path, port: int, token: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "APEXMEM_TOKEN": token}
    command = [sys.executable, "-c", "from apexmem.cli import main; main()"]
    with log.open("wb") as errors:
        server = subprocess.Popen(
            [*command, "serve", "--db", str(directory), "--port", str(port)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=errors,
            stderr=errors,
        )
    deadline = time.monotonic() + 120
    while True:
        if server.poll() is not None:
            raise SystemExit(f"the server exited: {log.read_text(encoding='utf-8')}")
        try:
            headers = {"Authorization": f"Bearer {token}"}
            httpx.get(f"http://127.0.0.1:{port}/v1/stats", headers=headers, timeout=5)
            return server
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _check_log(directory: Path, acknowledged: dict[str, int]) -> dict[str, Any]:
    """Every acknowledged write is in the log at its position, and nothing else is."""
    with Memory.open(directory) as memory:
        logged = {
            str(e.data.fact_id): e.position
            for e in memory.events(tags=["fact-asserted.v1"])
            if isinstance(e.data, FactAsserted)
        }
        chain_ok = memory.verify().ok
    missing = [f for f, p in acknowledged.items() if logged.get(f) != p]
    unacknowledged = [f for f in logged if f not in acknowledged]
    return {
        "facts_in_log": len(logged),
        "acknowledged": len(acknowledged),
        "missing_or_moved": len(missing),
        "unacknowledged_in_log": len(unacknowledged),
        "chain_ok": chain_ok,
        "ok": chain_ok and not missing and not unacknowledged,
    }


def _summary(samples: list[float], seconds: float) -> dict[str, Any]:
    if not samples:
        return {"requests": 0}
    ordered = sorted(samples)
    cut = statistics.quantiles(ordered, n=100) if len(ordered) > 1 else ordered * 99
    return {
        "requests": len(ordered),
        "per_second": round(len(ordered) / seconds, 1),
        "p50_ms": round(cut[49] * 1000, 2),
        "p95_ms": round(cut[94] * 1000, 2),
        "p99_ms": round(cut[98] * 1000, 2),
    }


def run(clients: int, seconds: float, root: Path) -> dict[str, Any]:
    """Serve a fresh memory in `root`, load it, stop it, check its log; the figures."""
    directory, token, port = root / "mem", secrets.token_urlsafe(24), _free_port()
    server = _start(directory, port, token, root / "serve.log")
    tally = Tally()
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    threads = [
        threading.Thread(target=_client, args=(base, token, n, started + seconds, tally))
        for n in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    server.send_signal(signal.SIGINT)
    server.wait(timeout=60)
    every = tally.latencies["append"] + tally.latencies["recall"]
    return {
        "clients": clients,
        "seconds": round(elapsed, 2),
        "all": _summary(every, elapsed),
        "append": _summary(tally.latencies["append"], elapsed),
        "recall": _summary(tally.latencies["recall"], elapsed),
        "failures": len(tally.failures),
        "failure_examples": tally.failures[:5],
        "retries": tally.retries,
        "log_check": _check_log(directory, tally.acknowledged),
        "server_exit_code": server.returncode,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the load test and write its figures; exit status 1 when the log check fails."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="apexmem-load-") as root:
        result = run(args.clients, args.seconds, Path(root))
    result["environment"] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "litestar": version("litestar"),
        "uvicorn": version("uvicorn"),
        "httpx": version("httpx"),
        "note": "clients and server share the machine's cores",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0 if result["log_check"]["ok"] and not result["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
