"""Deleting a tenant of `apexmem serve --tenants ROOT`: its memory goes entirely, and the
server's own log (`ROOT/.apexmem-server`, a name no tenant can have) records that it did.

The deletion is recorded first, through the write path, then done: files are overwritten
with zeros before they are removed (a best effort: a journaling or copy-on-write file
system, or a backup, may keep older blocks), and a tenant kept in PostgreSQL has its
schema dropped. A deletion cut short (a crash, say) is finished by running it again, which
records it again.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Final
from uuid import UUID, uuid5

import msgspec
import psycopg

from apexmem.events.base import MAX_REF_BYTES
from apexmem.events.envelope import AppendResult, NewEvent
from apexmem.events.errors import ApexmemError, ValidationError
from apexmem.events.log import EventLog
from apexmem.events.ports import LockedLog
from apexmem.events.postgres import Server, is_postgres_url, quoted_schema
from apexmem.events.tenancy import TenantDeleted
from apexmem.server.tenants import check_tenant_name, tenant_schema
from apexmem.service.pipeline import Append, Pipeline

__all__ = ["SERVER_DIRECTORY", "TenantRemoval", "delete_tenant", "server_log"]

SERVER_DIRECTORY: Final = ".apexmem-server"
"""Under ROOT: the server's own log (a leading dot: never a tenant's name)."""
_TENANTS: Final = UUID("3f0b9a52-6a8e-4d1c-9b7e-21d5c0f4a8e3")


class TenantRemoval(msgspec.Struct, frozen=True, kw_only=True):
    """A tenant deleted: where its deletion is recorded and what was removed."""

    tenant: str
    position: int
    files: int
    schema: str | None = None


def server_log(root: Path) -> EventLog:
    """The server's own log under `root` (created when absent)."""
    directory = root / SERVER_DIRECTORY
    directory.mkdir(exist_ok=True)
    return EventLog(directory / "events.db")


def delete_tenant(
    root: Path,
    name: str,
    *,
    reason: object,
    actor: str | None = None,
    database: str | None = None,
) -> TenantRemoval:
    """Delete tenant `name` of `root` (its schema in `database` too, when its memory is
    kept in PostgreSQL); raises ValidationError, deleting nothing, for a bad name, a
    missing reason or a tenant that is not there."""
    check_tenant_name(name)
    if not isinstance(reason, str) or not reason.strip() or len(reason.encode()) > MAX_REF_BYTES:
        raise ValidationError("reason", reason, f"is required: 1 to {MAX_REF_BYTES} bytes")
    if database is not None and not is_postgres_url(database):
        raise ValidationError("db", database, "is not a PostgreSQL URL")
    directory = root / name
    if not directory.is_dir() or directory.resolve().parent != root.resolve():
        raise ValidationError("tenant", name, f"is not a tenant under {root}")
    schema = tenant_schema(name) if database is not None else None
    position = _record(root, TenantDeleted(tenant=name, reason=reason, schema=schema), actor)
    if database is not None and schema is not None:
        _drop_schema(database, schema)
    return TenantRemoval(tenant=name, position=position, files=_shred(directory), schema=schema)


def _record(root: Path, event: TenantDeleted, actor: str | None) -> int:
    log = server_log(root)
    try:
        pipeline = Pipeline(log, retries=3, project=lambda: None)
        return pipeline.run("tenant-deleted", lambda _: _Record(event, actor))
    finally:
        log.close()


class _Record:
    """The attempt: one `tenant-deleted.v1` on the tenant's stream in the server's log."""

    def __init__(self, event: TenantDeleted, actor: str | None) -> None:
        self._event, self._actor = event, actor

    def decide(self, log: LockedLog) -> Append:
        stream = uuid5(_TENANTS, self._event.tenant)
        before = log.read_stream(stream)
        version = before[-1].version + 1 if before else 1
        new = NewEvent(stream_id=stream, version=version, data=self._event, actor=self._actor)
        return Append(events=[new])

    def finish(self, appended: AppendResult | None) -> int:
        assert appended is not None
        return appended.positions[0]

    def conflicted(self) -> None:
        return None


def _shred(directory: Path) -> int:
    """Overwrite every file under `directory` with zeros, then remove it all; the count."""
    files = [p for p in directory.rglob("*") if p.is_file() and not p.is_symlink()]
    for path in files:
        size = path.stat().st_size
        with path.open("r+b") as out:
            for _ in range(0, size, 1 << 20):
                out.write(bytes(min(1 << 20, size - out.tell())))
            out.flush()
            os.fsync(out.fileno())
    shutil.rmtree(directory)
    return len(files)


def _drop_schema(database: str, schema: str) -> None:
    try:
        with Server(database).connect() as connection:
            connection.execute(f"DROP SCHEMA IF EXISTS {quoted_schema(schema)} CASCADE")
    except psycopg.Error as e:
        raise ApexmemError(f"could not drop the schema {schema} of tenant: {e}") from e
