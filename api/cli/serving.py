"""`apexmem serve` (HTTP API) and `apexmem mcp` (MCP server): for agents in other processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from apexmem.cli.state import State, pass_state, usable_directory
from apexmem.config import holds_memory
from apexmem.events.errors import ApexmemError

__all__ = ["mcp_command", "serve"]

_MAX_BODY = 1_048_576  # apexmem.server.config.DEFAULT_MAX_BODY_BYTES, not imported: start-up


@click.command()
@click.option("--db", metavar="DIR", help="Memory directory to serve (default: the global --db).")
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
@pass_state
def serve(
    state: State, *, db: str | None, root: Path | None, host: str, port: int, max_body_bytes: int
) -> None:
    """Serve the HTTP API (OpenAPI at /v1/openapi.json) until Ctrl-C.

    Every request needs `Authorization: Bearer <token>`: APEXMEM_TOKEN, else `[server]
    token` in the memory's apexmem.toml; with neither, a token is made up for this run and
    printed (loopback only: on any other address the server refuses to start).

    A directory without a memory is served too (it is said on stderr): the memory is
    created when the first request reaches it, as agents write to it.

    Example: APEXMEM_TOKEN=$(openssl rand -hex 24) apexmem serve --db ./mem --port 8420
    """
    uvicorn, create_app, tenants_class = _server_modules()
    from apexmem.server.config import resolve_token

    if root is not None:
        if db is not None:
            raise click.UsageError("give --db or --tenants, not both")
        tenants = tenants_class(root=root)
        where = f"http://{host}:{port}/v1/tenants/<name>/"
    else:
        directory = _served_directory(state.directory(db))
        token, made_up = resolve_token(directory, host)
        if made_up:
            click.echo(f"no token configured; this run's token is {token}", err=True)
        tenants = tenants_class(single=directory, token=token)
        where = f"http://{host}:{port}/v1/"
    app = create_app(tenants, max_body_bytes=max_body_bytes)
    click.echo(f"apexmem serving {where} (OpenAPI at /v1/openapi.json)", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", lifespan="on")


def _served_directory(directory: Path) -> Path:
    """`directory`, made if absent; says on stderr when it holds no memory yet (a server
    creates one on the first request: agents write to it)."""
    usable_directory(directory)
    if not holds_memory(directory):
        click.echo(
            f"no memory in {directory} yet: it is created when the first request reaches it",
            err=True,
        )
    return directory


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
@click.option("--db", metavar="DIR", help="Memory directory to serve (default: the global --db).")
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
        from apexmem.server.config import resolve_token
        from apexmem.server.tenants import Tenants
    except ImportError as e:
        raise ApexmemError(
            f"apexmem mcp needs the mcp extra: pip install 'apexmem[mcp]' ({e})"
        ) from e
    directory = _served_directory(state.directory(db))
    if transport == "stdio":
        tenants = Tenants(single=directory)
        tenant = tenants.get()
        assert tenant is not None
        try:
            anyio.run(run_stdio, tenant)
        finally:
            tenants.close()
        return
    token, made_up = resolve_token(directory, host)
    if made_up:
        click.echo(f"no token configured; this run's token is {token}", err=True)
    tenants = Tenants(single=directory, token=token)
    click.echo(f"apexmem MCP at http://{host}:{port}/mcp", err=True)
    try:
        uvicorn.run(http_app(tenants, host=host), host=host, port=port, log_level="warning")
    finally:
        tenants.close()
