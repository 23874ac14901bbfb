"""`apexmem serve` (HTTP API) and `apexmem mcp` (MCP server): for agents in other processes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click
import msgspec

from apexmem.cli.state import State, pass_state, usable_directory
from apexmem.config import holds_memory
from apexmem.events.errors import ApexmemError
from apexmem.location import Location

__all__ = ["mcp_command", "serve"]

_MAX_BODY = 1_048_576  # apexmem.server.config.DEFAULT_MAX_BODY_BYTES, not imported: start-up


@click.command()
@click.option(
    "--db",
    metavar="DIR|URL",
    help="Memory to serve: a directory or a PostgreSQL URL (default: the global --db). "
    "With --tenants, a PostgreSQL URL holding each tenant's memory in its own schema.",
)
@click.option(
    "--tenants",
    "root",
    metavar="ROOT",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Serve every tenant ROOT/<name> at /v1/tenants/<name>/..., each with its own token.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8420, show_default=True, help="Port to listen on.")
@click.option(
    "--max-body-bytes",
    default=_MAX_BODY,
    show_default=True,
    help="Larger request bodies are refused with 413.",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Server processes sharing the port (each opens the memory itself).",
)
@pass_state
def serve(
    state: State,
    *,
    db: str | None,
    root: Path | None,
    host: str,
    port: int,
    max_body_bytes: int,
    workers: int,
) -> None:
    """Serve the HTTP API (OpenAPI at /v1/openapi.json) and the explorer (/explore) until Ctrl-C.

    Every request needs `Authorization: Bearer <token>`: APEXMEM_TOKEN, else `[server]
    token` in the memory's apexmem.toml; with neither, a token is made up for this run and
    printed (loopback only: on any other address the server refuses to start).

    A directory without a memory is served too (it is said on stderr): the memory is
    created when the first request reaches it, as agents write to it. Several servers
    (or --workers) on one PostgreSQL memory answer the same; a write acknowledged by one is
    readable from all once projected (run `apexmem project --follow` beside them; `stats`
    shows the lag).

    Example: APEXMEM_TOKEN=$(openssl rand -hex 24) apexmem serve --db ./mem --port 8420
    """
    uvicorn, _create_app, _tenants_class = _server_modules()
    from apexmem.server.app import CONFIG_VARIABLE
    from apexmem.server.config import ServeConfig, resolve_token

    if root is not None:
        database = None
        if db is not None:
            database = state.location(db)
            if not database.on_postgres:
                raise click.UsageError("with --tenants, --db may only name a PostgreSQL URL")
        config = ServeConfig(db=db, tenants=str(root), max_body_bytes=max_body_bytes)
        where = f"http://{host}:{port}/v1/tenants/<name>/"
    else:
        location = _served(state.location(db))
        token, made_up = resolve_token(location.directory, host)
        if made_up:
            click.echo(f"no token configured; this run's token is {token}", err=True)
        config = ServeConfig(
            db=_text(location, db if db is not None else state.db),
            token=token,
            max_body_bytes=max_body_bytes,
        )
        where = f"http://{host}:{port}/v1/"
    os.environ[CONFIG_VARIABLE] = msgspec.json.encode(config).decode()
    click.echo(f"apexmem serving {where} (OpenAPI at /v1/openapi.json)", err=True)
    uvicorn.run(
        "apexmem.server.app:from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
        lifespan="on",
    )


def _text(location: Location, given: str | None) -> str:
    """What names `location` for a worker process: the URL as given, or the absolute path."""
    if location.on_postgres and given is not None:
        return given
    return str(location.directory.absolute())


def _served(location: Location) -> Location:
    """`location`, its directory made if absent; says on stderr when it holds no memory yet
    (a server creates one on the first request: agents write to it)."""
    if not location.on_postgres:
        usable_directory(location.directory)
    if not holds_memory(location):
        click.echo(
            f"no memory in {location} yet: it is created when the first request reaches it",
            err=True,
        )
    return location


def _server_modules() -> tuple[Any, Any, Any]:
    try:
        import uvicorn

        from apexmem.server.app import create_app
        from apexmem.server.tenants import Tenants
    except ImportError as e:
        raise ApexmemError(
            f"apexmem serve needs the server extra: pip install 'apexmem[server]' ({e})"
        ) from e
    return uvicorn, create_app, Tenants


@click.command(name="mcp")
@click.option(
    "--db",
    metavar="DIR|URL",
    help="Memory to serve: a directory or a PostgreSQL URL (default: the global --db).",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a client that starts this process; http for streamable HTTP at /mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (http).")
@click.option("--port", default=8421, show_default=True, help="Port to listen on (http).")
@pass_state
def mcp_command(state: State, *, db: str | None, transport: str, host: str, port: int) -> None:
    """Serve the memory to MCP clients: remember, record_message, recall, recall_as_of,
    facts_about, traverse and history.

    Over http every request needs the bearer token, chosen as for `apexmem serve`. As
    there, a memory that is absent is created when the first request reaches it.

    Example: apexmem mcp --db ./mem   (or: apexmem mcp --transport http --port 8421)
    """
    try:
        import anyio
        import uvicorn

        from apexmem.mcp_server import http_app, run_stdio
        from apexmem.server.config import resolve_token, served
        from apexmem.server.tenants import Tenants
    except ImportError as e:
        raise ApexmemError(
            f"apexmem mcp needs the mcp extra: pip install 'apexmem[mcp]' ({e})"
        ) from e
    location = _served(state.location(db))
    if transport == "stdio":
        tenants = Tenants(single=location, opener=served)
        tenant = tenants.get()
        assert tenant is not None
        try:
            anyio.run(run_stdio, tenant)
        finally:
            tenants.close()
        return
    token, made_up = resolve_token(location.directory, host)
    if made_up:
        click.echo(f"no token configured; this run's token is {token}", err=True)
    tenants = Tenants(single=location, token=token, opener=served)
    click.echo(f"apexmem MCP at http://{host}:{port}/mcp", err=True)
    try:
        uvicorn.run(http_app(tenants, host=host), host=host, port=port, log_level="warning")
    finally:
        tenants.close()
