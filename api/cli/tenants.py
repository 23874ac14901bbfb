"""`apexmem tenants delete`: remove a tenant of `apexmem serve --tenants ROOT` entirely."""

from __future__ import annotations

from pathlib import Path

import click

from apexmem.cli.state import State, pass_state

__all__ = ["tenants"]


@click.group()
def tenants() -> None:
    """The tenants of a server (`apexmem serve --tenants ROOT`).

    Example: apexmem tenants delete acme --root ./tenants --reason "contract ended"
    """


@tenants.command("delete")
@click.argument("name")
@click.option(
    "--root",
    required=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="The ROOT the server serves (--tenants ROOT).",
)
@click.option(
    "--db",
    "database",
    metavar="URL",
    help="The PostgreSQL database holding the tenants' schemas (serve's --db URL).",
)
@click.option("--reason", help="Why (required; recorded in the server's log).")
@click.option("--actor", help="Who asked (recorded in the server's log).")
@pass_state
def delete(
    state: State,
    *,
    name: str,
    root: Path,
    database: str | None,
    reason: str | None,
    actor: str | None,
) -> None:
    """Delete tenant NAME: its memory (directory, or schema with --db) goes entirely, files
    overwritten first, and ROOT/.apexmem-server's log records who deleted it, when and why.
    Stop serving it first (a running server keeps what it opened).

    Example: apexmem tenants delete acme --root ./tenants --reason "contract ended"
    """
    from apexmem.cli.render import console, emit_json
    from apexmem.tenancy import delete_tenant

    removed = delete_tenant(root, name, reason=reason, actor=actor, database=database)
    if state.as_json:
        emit_json(removed)
        return
    dropped = f" and schema {removed.schema}" if removed.schema else ""
    console.print(
        f"deleted tenant {removed.tenant} ({removed.files} files{dropped}); recorded at "
        f"position {removed.position} of {root / '.apexmem-server'}"
    )
