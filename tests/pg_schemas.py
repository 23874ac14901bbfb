"""A PostgreSQL memory for a test: a schema of its own on the test server, dropped after."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from uuid import uuid4

import psycopg
from storage_backends import POSTGRES_URL, drop_schema

__all__ = ["postgres_schema"]


@contextmanager
def postgres_schema(prefix: str) -> Iterator[str]:
    """The URL of a memory in a new schema (`?schema=<prefix>_<random>`), dropped after.

    Fails (never skips) when the test server does not answer.
    """
    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=5).close()
    except psycopg.Error as e:
        raise AssertionError(
            f"the PostgreSQL tests need a server at {POSTGRES_URL} (APEXMEM_TEST_POSTGRES; "
            f".ci/run starts the local one): {e}"
        ) from e
    schema = f"{prefix}_{uuid4().hex[:16]}"
    try:
        yield f"{POSTGRES_URL}?schema={schema}"
    finally:
        drop_schema(schema)
