"""Deleting a tenant (`apexmem tenants delete`): its memory goes entirely, directory or
PostgreSQL schema, and the server's own log records who deleted it, when and why."""

from __future__ import annotations

from pathlib import Path
from typing import Final
from uuid import uuid4

import psycopg
import pytest
from storage_backends import POSTGRES_URL

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events.errors import ValidationError
from apexmem.events.tenancy import TenantDeleted
from apexmem.replay.verify import verify
from apexmem.server.tenants import Tenants, tenant_schema
from apexmem.tenancy import delete_tenant, server_log

TOKEN: Final = "alpha-token-0123456789"


def _tenant(root: Path, name: str, location: str | None = None) -> None:
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "apexmem.toml").write_text(
        f'[memory.vectors]\nenabled = false\n\n[server]\ntoken = "{TOKEN}"\n', encoding="utf-8"
    )
    with Memory.open(location or directory, embedder=HashingEmbedder()) as memory:
        memory.assert_fact(subject="Priya Shah", relation="works_at", object="Acme Corp")


def _recorded(root: Path) -> list[TenantDeleted]:
    log = server_log(root)
    try:
        assert verify(log).ok
        return [e.data for e in log.read() if isinstance(e.data, TenantDeleted)]
    finally:
        log.close()


def test_deleting_a_tenant_removes_its_directory_and_records_it(tmp_path: Path) -> None:
    root = tmp_path / "tenants"
    _tenant(root, "alpha")
    _tenant(root, "beta")

    removed = delete_tenant(root, "alpha", reason="contract ended #44", actor="ops")

    assert not (root / "alpha").exists() and (root / "beta").exists()
    assert removed.files > 0
    assert [(e.tenant, e.reason) for e in _recorded(root)] == [("alpha", "contract ended #44")]
    tenants = Tenants(root=root)
    assert tenants.get("alpha") is None and tenants.get("beta") is not None
    tenants.close()


@pytest.mark.parametrize(
    ("name", "reason", "field"),
    [("gamma", "r", "tenant"), ("alpha", None, "reason"), ("../alpha", "r", "tenant")],
)
def test_a_bad_deletion_names_the_field_and_deletes_nothing(
    tmp_path: Path, name: str, reason: str | None, field: str
) -> None:
    root = tmp_path / "tenants"
    _tenant(root, "alpha")

    with pytest.raises(ValidationError) as raised:
        delete_tenant(root, name, reason=reason)

    assert raised.value.field == field
    assert (root / "alpha" / "events.db").exists()
    assert not (root / ".apexmem-server").exists()


def test_deleting_a_postgresql_tenant_drops_its_schema(tmp_path: Path) -> None:
    root = tmp_path / "tenants"
    name = f"alpha-{uuid4().hex[:12]}"  # a schema no other test uses
    schema = tenant_schema(name)
    try:
        _tenant(root, name, f"{POSTGRES_URL}?schema={schema}")

        removed = delete_tenant(root, name, reason="contract ended", database=POSTGRES_URL)

        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            left = connection.execute(
                "SELECT count(*) FROM pg_namespace WHERE nspname = %s", (schema,)
            ).fetchone()
        assert left == (0,)
        assert removed.schema == schema and not (root / name).exists()
        assert [e.schema for e in _recorded(root)] == [schema]
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
