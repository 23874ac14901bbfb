"""How a server is started: where, over which memories, with which token; refusals at start."""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

from apexmem.config import load_settings
from apexmem.domain.settings import TOKEN_PATTERN
from apexmem.events.errors import ApexmemError, ValidationError
from apexmem.location import Location

if TYPE_CHECKING:
    from apexmem.memory import Memory

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "MIN_TOKEN_LENGTH",
    "ServeConfig",
    "is_loopback",
    "resolve_token",
    "served",
]

DEFAULT_MAX_BODY_BYTES: Final = 1_048_576
"""Request bodies over 1 MiB are refused with 413 (`--max-body-bytes` changes it)."""
MIN_TOKEN_LENGTH: Final = 16


class ServeConfig(msgspec.Struct, frozen=True, kw_only=True):
    """One `apexmem serve`: a memory (`db`, a directory or a PostgreSQL URL) or a root of
    tenants (`tenants`, their memories in `db` when that is a PostgreSQL URL).

    Passed to each worker process in `APEXMEM_SERVE_CONFIG` (see `server.app.from_environment`).
    """

    db: str | None = None
    tenants: str | None = None
    token: str | None = None
    """The bearer token (single memory only); see `resolve_token`."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES


def served(location: Location) -> Memory:
    """Open a memory to serve: as `Memory.open`, except that on PostgreSQL an unset
    `[memory.projection] inline` is off (servers leave projection to `project --follow`)."""
    from apexmem.memory import Memory

    settings = load_settings(location.directory)
    projection = settings.memory.projection
    if location.on_postgres and projection.inline is None:
        memory = msgspec.structs.replace(
            settings.memory, projection=msgspec.structs.replace(projection, inline=False)
        )
        settings = msgspec.structs.replace(settings, memory=memory)
    return Memory.open(location, settings=settings)


def is_loopback(host: str) -> bool:
    """Whether `host` only listens on this machine (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve_token(directory: Path, host: str) -> tuple[str, bool]:
    """The token for one memory and whether it was generated for this run.

    `APEXMEM_TOKEN`, else `[server] token` in the memory's settings; with neither, a
    random token on a loopback address, and a refusal to start on any other.
    """
    configured = os.environ.get("APEXMEM_TOKEN") or load_settings(directory).server.token
    if configured is not None:
        if not re.fullmatch(TOKEN_PATTERN, configured):
            raise ValidationError(
                "APEXMEM_TOKEN",
                "<hidden>",
                f"is not {MIN_TOKEN_LENGTH} to 512 visible ASCII characters (no spaces)",
            )
        return configured, False
    if not is_loopback(host):
        raise ApexmemError(
            f"refusing to serve on {host} without a token: set APEXMEM_TOKEN or "
            f"[server] token in {directory / 'apexmem.toml'} (at least {MIN_TOKEN_LENGTH} "
            "characters), or bind 127.0.0.1"
        )
    return secrets.token_urlsafe(32), True
