"""Where a memory lives: a directory of SQLite files, or a schema of a PostgreSQL database.

`--db ./mem` and `Memory.open("./mem")` name a directory; `--db postgresql://...` and
`Memory.open("postgresql://...")` name a database, and `?schema=NAME` in the URL picks the
schema that holds the memory (default `apexmem`). A PostgreSQL memory still has a local
directory: its cache (the FAISS index file of this process's machine, and an optional
`apexmem.toml`), under `$APEXMEM_CACHE` or `~/.cache/apexmem`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import msgspec

from apexmem.events.errors import ValidationError
from apexmem.events.postgres import is_postgres_url, quoted_schema

__all__ = ["DEFAULT_SCHEMA", "Location", "is_url", "locate"]

DEFAULT_SCHEMA: Final = "apexmem"
"""The schema a PostgreSQL URL without `?schema=` names."""
DEFAULT_CACHE: Final = Path("~/.cache/apexmem")


class Location(msgspec.Struct, frozen=True, kw_only=True):
    """A memory's place: `url` and `schema` on PostgreSQL (else None), and its directory."""

    directory: Path
    """The SQLite files; on PostgreSQL, this machine's cache of the memory."""
    url: str | None = None
    """A libpq URL (`postgresql://user@host:port/db`), without the schema parameter."""
    schema: str | None = None

    @property
    def on_postgres(self) -> bool:
        """Whether the log and read models are in PostgreSQL."""
        return self.url is not None

    def __str__(self) -> str:
        if self.url is None:
            return str(self.directory)
        return f"{_without_password(self.url)} (schema {self.schema})"


def is_url(text: str) -> bool:
    """Whether `text` names a database rather than a directory."""
    return is_postgres_url(text)


def locate(
    text: str | os.PathLike[str], *, schema: str | None = None, cache: Path | None = None
) -> Location:
    """The location `text` names: a PostgreSQL URL or a directory (`~` expanded).

    `schema` overrides the URL's `?schema=` (a server's tenants share one URL).
    """
    if isinstance(text, str) and is_url(text):
        return _database(text, schema, cache)
    return Location(directory=Path(text).expanduser())


def _database(text: str, schema: str | None, cache: Path | None) -> Location:
    parts = urlsplit(text)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [value for key, value in query if key == "schema"]
    if len(schemas) > 1:
        raise ValidationError("schema", schemas, "is given more than once in the URL")
    if schema is None:
        schema = schemas[0] if schemas else DEFAULT_SCHEMA
    quoted_schema(schema)  # a plain name, or ValidationError naming `schema`
    if not parts.path.strip("/"):
        raise ValidationError("url", _without_password(text), "names no database (add /DBNAME)")
    rest = urlencode([(key, value) for key, value in query if key != "schema"])
    url = urlunsplit(("postgresql", parts.netloc, parts.path, rest, ""))
    root = cache if cache is not None else _cache_root()
    host = f"{parts.hostname or 'local'}-{parts.port or 5432}"
    directory = root / _safe(host) / _safe(parts.path.strip("/")) / schema
    return Location(directory=directory, url=url, schema=schema)


def _cache_root() -> Path:
    chosen = os.environ.get("APEXMEM_CACHE")
    return Path(chosen).expanduser() if chosen else DEFAULT_CACHE.expanduser()


def _safe(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", part) or "_"


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
