"""Where a suite run keeps a memory: a directory (SQLite) or a fresh PostgreSQL schema.

A PostgreSQL place is a schema of its own in the database `--backend` names, made by the
first write and dropped by `drop` (unless the run keeps it); its local cache (the FAISS
index file) lies under `$APEXMEM_CACHE`, which the suite points into its scratch folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlencode
from uuid import uuid4

import psycopg
from catchup import disk_bytes

from apexmem.location import locate

__all__ = ["Place", "directory_place", "drop", "place_bytes", "postgres_place"]


class Place(NamedTuple):
    """A memory's place: what `Memory.open` takes, and on PostgreSQL the URL and schema."""

    memory: str
    url: str | None = None
    schema: str | None = None

    @property
    def backend(self) -> str:
        """`sqlite` or `postgresql`."""
        return "sqlite" if self.url is None else "postgresql"

    def sibling(self, name: str) -> Place:
        """Another place beside this one (a directory or schema suffixed `_name`)."""
        if self.url is None:
            return directory_place(Path(f"{self.memory}_{name}"))
        return _in_schema(self.url, f"{self.schema}_{name}")


def directory_place(directory: Path) -> Place:
    """A SQLite memory in `directory`."""
    return Place(str(directory))


def postgres_place(url: str, label: str) -> Place:
    """A new schema `bench_<label>_<random>` in the database `url` names (its own
    `?schema=` ignored)."""
    return _in_schema(url, f"bench_{label}_{uuid4().hex[:8]}")


def _in_schema(url: str, schema: str) -> Place:
    bare = locate(url).url
    assert bare is not None, f"{url} is not a PostgreSQL URL"
    joiner = "&" if "?" in bare else "?"
    return Place(f"{bare}{joiner}{urlencode({'schema': schema})}", bare, schema)


def vacuum_catalogs(place: Place) -> list[str]:
    """On a server with autovacuum off (this machine's, and CI's), VACUUM the system
    catalogs of the place's database that hold dead rows, as autovacuum would have; the
    catalogs vacuumed. Every schema a test or an earlier run created and dropped leaves
    dead rows in pg_attribute, pg_class, pg_depend: after one 200,000-fact suite run and
    120 tests, 52,859 in pg_attribute, and a recall's planning slowed with them (BFS p95
    23.6 -> 31.0 ms at 200,000 facts)."""
    if place.url is None:
        return []
    with psycopg.connect(place.url, autocommit=True) as connection:
        if connection.execute("SHOW autovacuum").fetchone() != ("off",):
            return []
        dead = connection.execute(
            "SELECT relname FROM pg_stat_sys_tables WHERE schemaname = 'pg_catalog'"
            " AND n_dead_tup > 0 ORDER BY relname"
        ).fetchall()
        for (name,) in dead:
            connection.execute(f"VACUUM (ANALYZE) pg_catalog.{name}")
    return [name for (name,) in dead]


def drop(place: Place) -> None:
    """Drop a PostgreSQL place's schema (a directory goes with the scratch folder)."""
    if place.url is None:
        return
    with psycopg.connect(place.url, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{place.schema}" CASCADE')


def place_bytes(place: Place) -> dict[str, int]:
    """Bytes of the log and of the read models apart: files of a directory; on PostgreSQL the
    schema's tables with their indexes and TOAST (the log's tables are `log_*`), and the
    local FAISS index file with the read models."""
    if place.url is None:
        return disk_bytes(Path(place.memory))
    with psycopg.connect(place.url) as connection:
        sizes = connection.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'r'",
            (place.schema,),
        ).fetchall()
    log = sum(size for name, size in sizes if name.startswith("log_"))
    cache = locate(place.memory).directory
    local = sum(p.stat().st_size for p in cache.iterdir() if p.is_file()) if cache.exists() else 0
    return {"log": log, "readmodels": sum(size for _, size in sizes) - log + local}
