"""Serving one PostgreSQL memory from several processes, and tenants in schemas of their own."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import httpx
import psycopg
import pytest
from litestar.testing import TestClient
from pg_schemas import postgres_schema
from serving import AUTH, CLI, free_port, running
from storage_backends import POSTGRES_URL, drop_schema

from apexmem import Memory
from apexmem.location import Location, locate
from apexmem.server.app import create_app
from apexmem.server.tenants import Tenants, tenant_schema

SETTINGS: Final = '[memory.vectors]\nembedder = "hashing"\n'
WAIT_S: Final = 60.0


def _eventually(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (found := check()):
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.2)
    return found


@pytest.mark.slow  # three server processes and a follower on one database
def test_servers_on_one_postgresql_memory_answer_alike_once_projected(tmp_path: Path) -> None:
    with postgres_schema("serve") as url:
        cache = tmp_path / "cache"
        locate(url, cache=cache).directory.mkdir(parents=True)
        (locate(url, cache=cache).directory / "apexmem.toml").write_text(SETTINGS, "utf-8")
        env = {"APEXMEM_CACHE": str(cache)}
        Memory.open(locate(url, cache=cache)).close()  # `apexmem init`, as an operator would
        one, two = (f"http://127.0.0.1:{free_port()}" for _ in range(2))
        body = {"facts": [{"subject": "Alice", "relation": "works_at", "object": "Acme"}]}
        keyed = {**AUTH, "Idempotency-Key": "alice-acme"}

        def facts(base: str) -> list[str]:
            found = httpx.get(f"{base}/v1/facts", params={"entity": "Alice"}, headers=AUTH)
            return [f["object"] for f in found.json()["facts"]]

        with (
            running("serve", "--db", url, "--port", one.rsplit(":")[-1], "--workers", "2",
                    ready=f"{one}/v1/stats", log=tmp_path / "one.log", env=env),
            running("serve", "--db", url, "--port", two.rsplit(":")[-1],
                    ready=f"{two}/v1/stats", log=tmp_path / "two.log", env=env),
        ):  # fmt: skip
            first = httpx.post(f"{one}/v1/facts", json=body, headers=keyed).json()
            assert facts(two) == []  # acknowledged, not projected: servers leave that to followers
            lag = httpx.get(f"{two}/v1/stats", headers=AUTH).json()["projection_lag"]
            assert lag > 0
            with running("project", "--follow", "--db", url, ready=None,
                         log=tmp_path / "follow.log", env=env):  # fmt: skip
                assert _eventually(lambda: facts(two), "the second server to see it") == ["Acme"]
                assert facts(one) == ["Acme"]
                retried = httpx.post(f"{two}/v1/facts", json=body, headers=keyed).json()
                stats = httpx.get(f"{one}/v1/stats", headers=AUTH).json()
        assert retried == first
        assert stats["projection_lag"] == 0
        with Memory.open(locate(url, cache=cache), create=False) as memory:
            assert memory.verify().ok
            assert len(list(memory.events(tags=["fact-asserted.v1"]))) == 1


def _tenants_root(tmp_path: Path) -> Path:
    for name, token in (("alpha", "alpha-token-0123456789"), ("beta-2", "beta-token-01234567890")):
        (tmp_path / "tenants" / name).mkdir(parents=True)
        settings = f'{SETTINGS}\n[server]\ntoken = "{token}"\n'
        (tmp_path / "tenants" / name / "apexmem.toml").write_text(settings, encoding="utf-8")
    return tmp_path / "tenants"


def _open_in(cache: Path) -> Callable[[Location], Memory]:
    def opener(location: Location) -> Memory:
        return Memory.open(locate(f"{location.url}?schema={location.schema}", cache=cache))

    return opener


def test_each_postgresql_tenant_keeps_its_rows_in_a_schema_of_its_own(tmp_path: Path) -> None:
    alpha = {"Authorization": "Bearer alpha-token-0123456789"}
    beta = {"Authorization": "Bearer beta-token-01234567890"}
    body = {"facts": [{"subject": "Alice", "relation": "works_at", "object": "Acme"}]}
    schemas = [tenant_schema("alpha"), tenant_schema("beta-2")]
    tenants = Tenants(
        root=_tenants_root(tmp_path), database=POSTGRES_URL, opener=_open_in(tmp_path / "c")
    )
    try:
        with TestClient(create_app(tenants)) as client:
            written = client.post("/v1/tenants/alpha/facts", json=body, headers=alpha)
            own = client.get("/v1/tenants/alpha/facts", params={"entity": "Alice"}, headers=alpha)
            other = client.get("/v1/tenants/beta-2/facts", params={"entity": "Alice"}, headers=beta)
            crossed_read = client.get("/v1/tenants/beta-2/stats", headers=alpha)
            crossed_write = client.post("/v1/tenants/alpha/facts", json=body, headers=beta)
        assert written.status_code == 200
        assert [f["object"] for f in own.json()["facts"]] == ["Acme"]
        assert other.json()["facts"] == []
        assert (crossed_read.status_code, crossed_write.status_code) == (401, 401)
        with psycopg.connect(POSTGRES_URL) as connection:
            rows = {
                schema: connection.execute(f'SELECT count(*) FROM "{schema}".log_events').fetchone()
                for schema in schemas
            }
        assert rows == {schemas[0]: (written.json()["results"][0]["position"],), schemas[1]: (0,)}
    finally:
        tenants.close()
        for schema in schemas:
            drop_schema(schema)


def test_a_postgresql_memory_that_is_not_there_is_refused_by_read_commands(
    tmp_path: Path,
) -> None:
    with postgres_schema("absent") as url:
        done = subprocess.run(
            [*CLI, "--db", url, "stats"], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 2
        assert "no memory in" in done.stderr
        with psycopg.connect(POSTGRES_URL) as connection:
            schema = url.rsplit("=", 1)[1]
            found = connection.execute(
                "SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s", (schema,)
            ).fetchone()
        assert found == (0,)
