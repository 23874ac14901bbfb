"""The `apexmem` command line: every command has help with an example."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

import click

from apexmem.cli.backfill import backfill
from apexmem.cli.decay import decay
from apexmem.cli.episode import episode
from apexmem.cli.evict import evict
from apexmem.cli.export import export
from apexmem.cli.forget import forget
from apexmem.cli.graph import communities, decay_rate, episodes
from apexmem.cli.links import fact_graph, link
from apexmem.cli.merges import link_notes, merges
from apexmem.cli.migrating import migrate
from apexmem.cli.naming import alias, merge
from apexmem.cli.one_fact import assert_command, retract
from apexmem.cli.params import COUNT, POSITION
from apexmem.cli.projection import project, rebuild, stats
from apexmem.cli.query import entities, facts, traverse
from apexmem.cli.recall import recall
from apexmem.cli.serving import mcp_command, serve
from apexmem.cli.state import (
    NoMemory,
    State,
    accept_global_options,
    no_entity,
    usable_directory,
)
from apexmem.cli.status import status
from apexmem.cli.tenants import tenants
from apexmem.cli.timeline import timeline
from apexmem.cli.timetravel import diff, replay
from apexmem.cli.usage import decay_usage
from apexmem.config import EVENTS_FILE, SETTINGS_FILE
from apexmem.domain.types import ENTITY_TYPES
from apexmem.events.diskfull import full_disk, is_full
from apexmem.events.errors import ApexmemError, NotFoundError, ValidationError

__all__ = ["cli", "main"]

_DB_HELP = (
    "Memory directory (default: $APEXMEM_HOME, else ~/.apexmem). Only init and writing "
    "commands create a memory; the others refuse a directory without one."
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", envvar="APEXMEM_HOME", metavar="DIR", help=_DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for programs, not tables.")
@click.version_option(package_name="apexmem")
@click.pass_context
def cli(ctx: click.Context, db: str | None, as_json: bool) -> None:
    """apexmem: temporal knowledge-graph memory for agents, append-only and hash-chained.

    Example: apexmem --db ./mem ingest facts.jsonl
    """
    given = ctx.get_parameter_source("db") is click.core.ParameterSource.COMMANDLINE
    ctx.obj = State(db, as_json, db_given=given)


@cli.command()
@click.pass_obj
def init(state: State) -> None:
    """Create a memory (a directory, or a schema of a PostgreSQL database) with its log and
    a settings file.

    Commands that only read (facts, stats, verify, ...) never create a memory: they refuse
    a place without one. `init` and `ingest` create it. For a PostgreSQL URL the settings
    file is written to this machine's cache directory of that memory (see `apexmem.location`).

    Example: apexmem --db ./mem init   (or: apexmem --db postgresql://app@db/memory init)
    """
    from apexmem.domain.settings import Settings

    location = state.location()
    with state.open(create=True) as memory:
        if memory.read_only is not None:
            raise ApexmemError(f"{location} is read-only: {memory.read_only}")
    directory = location.directory
    settings_path = directory / SETTINGS_FILE
    if not settings_path.exists():
        settings_path.write_text(_settings_toml(Settings()), encoding="utf-8")
    log = str(location) if location.on_postgres else str(directory / EVENTS_FILE)
    state.say(
        {"directory": str(directory), "log": log, "settings": str(settings_path)},
        f"memory ready in {location} (log {log}, settings {settings_path})",
    )


@cli.command()
@click.argument("source", type=click.File("rb"), metavar="FILE|-")
@click.pass_obj
def ingest(state: State, source: BinaryIO) -> None:
    """Apply JSON-lines commands (one per line, tagged by "op"); bad lines are reported.

    Good lines are kept; the exit status is 1 if any line failed (a line that is not UTF-8
    too). A byte-order mark at the start is ignored. Creates the memory if it is absent.

    Example: echo '{"op":"assert","subject":"Alice","subject_type":"person",
    "relation":"works_at","object":"Acme","object_type":"organization"}' | apexmem ingest -
    """
    from apexmem.cli.ingest import IngestReport
    from apexmem.cli.ingest import ingest as run

    report = IngestReport()
    with state.open(create=True) as memory:
        steps = run(memory, source, report)
        size = _size(source)
        if state.as_json or not sys.stderr.isatty() or size is None:
            for _ in steps:
                pass
        else:
            _with_progress(steps, source, size)
    if state.as_json:
        from apexmem.cli.render import emit_json

        emit_json(report)
    else:
        from apexmem.cli.render import console, errors

        for failure in report.failed:
            errors.print(f"line {failure.line}: {failure.error}")
        console.print(
            f"{report.lines} line{'' if report.lines == 1 else 's'}, {report.applied} applied, "
            f"{len(report.failed)} failed"
        )
    if report.failed:
        sys.exit(1)


def _size(source: BinaryIO) -> int | None:
    try:
        return os.fstat(source.fileno()).st_size or None
    except (OSError, ValueError):
        return None


def _with_progress(steps: Any, source: BinaryIO, size: int) -> None:
    from rich.progress import Progress

    from apexmem.cli.render import errors

    with Progress(console=errors, transient=True) as progress:
        task = progress.add_task("ingesting", total=size)
        for _ in steps:
            progress.update(task, completed=source.tell())


@cli.command(name="log")
@click.option("--start", default=1, show_default=True, type=POSITION, help="First position.")
@click.option(
    "--limit", default=50, show_default=True, type=COUNT, help="At most this many events."
)
@click.option("--tag", "tags", multiple=True, help="Only events with this tag (repeatable).")
@click.pass_obj
def log_command(state: State, start: int, limit: int, tags: tuple[str, ...]) -> None:
    """Show events of the log in position order.

    Example: apexmem log --tag fact-asserted.v1 --limit 20
    """
    from itertools import islice

    from apexmem.cli.render import console, emit_json, log_table

    with state.open() as memory:
        events = list(islice(memory.events(start=start, tags=tags), limit))
    if state.as_json:
        emit_json(events)
        return
    console.print(log_table(events, f"log from position {start}"))


@cli.command()
@click.option(
    "--fact",
    "fact",
    metavar="ID",
    help="A fact id (or its short form, f91955cd:3): its slot's events.",
)
@click.option(
    "--entity", "entity", metavar="NAME", help="An entity name: its events, names and slots."
)
@click.option(
    "--type",
    "entity_type",
    type=click.Choice(ENTITY_TYPES),
    metavar="TYPE",
    help="Entity type for --entity: person, organization, ... (default: any type).",
)
@click.option(
    "--slot",
    "slot",
    metavar="ID",
    help="A slot id (or a unique prefix): every version of one fact.",
)
@click.pass_obj
def history(
    state: State, fact: str | None, entity: str | None, entity_type: str | None, slot: str | None
) -> None:
    """Every event of a fact's slot (or an entity), with positions, times and chain hashes.

    An entity's history holds its own events, its names and every slot it is part of;
    exit status 1 when no entity answers to NAME.

    Example: apexmem history --entity Alice  (or --fact with an id from `apexmem facts Alice`)
    """
    from apexmem.cli.ids import resolve_fact, resolve_slot
    from apexmem.cli.render import console, emit_json, history_table

    with state.open() as memory:
        fact = fact and str(resolve_fact(memory, fact, "--fact", one_slot=True))
        slot = slot and str(resolve_slot(memory, slot, "--slot"))
        try:
            entries = memory.history(fact=fact, entity=entity, entity_type=entity_type, slot=slot)
        except NotFoundError:
            if entity is None:
                raise
            no_entity(entity, entity_type)
    if state.as_json:
        emit_json(entries)
    else:
        console.print(history_table(entries, f"history of {fact or entity or slot}"))


@cli.command()
@click.option(
    "--expect",
    metavar="HEAD",
    help="A kept head (POSITION:HEX from `apexmem head`, or HEX for the end): exit 1 "
    "unless the chain holds it.",
)
@click.pass_obj
def verify(state: State, expect: str | None) -> None:
    """Recompute the hash chain, the time index and the idempotency keys; exit 1 and name
    the first bad position if one breaks (writes are then refused: see `recover`).

    Example: apexmem --db ./mem verify --expect 1042:9f3c...  (a head kept elsewhere)
    """
    with state.open() as memory:
        report = memory.verify(expect=expect)
    if report.ok:
        text = (
            f"chain ok: {report.events_checked} events, head {report.head_position}:{report.head}"
        )
        if report.erased_elsewhere:  # a replay copy cut before an erasure
            text += (
                "; records erased after this copy's end are vouched for by the erasure "
                f"{', '.join(report.erased_elsewhere)} of the log it was copied from"
            )
    elif report.first_bad_position is None:
        text = f"chain does NOT hold the kept head: {report.reason}"
    else:
        text = (
            f"chain BROKEN at position {report.first_bad_position}: {report.reason} "
            f"({report.events_checked} events verified before it)"
        )
    state.say(report, text)
    if not report.ok:
        sys.exit(1)


@cli.command()
@click.pass_obj
def head(state: State) -> None:
    """Print the chain's head: the last position and its hash (keep it to check with
    `verify --expect`, or sign it).

    Example: apexmem --db ./mem head   (prints e.g. 1042:9f3c...)
    """
    with state.open() as memory:
        found = memory.head()
    state.say(found, str(found))


@cli.command()
@click.option("--to", "target", required=True, metavar="NEWDIR", help="A new or empty directory.")
@click.pass_obj
def recover(state: State, target: str) -> None:
    """Copy the log up to its last good position into NEWDIR, a new writable memory; the
    damaged log stays as it is. Refused when the chain verifies.

    Example: apexmem --db ./mem recover --to ./mem-recovered
    """
    from apexmem.damage import recover as run

    with state.open() as memory:
        done = run(memory.log, memory.directory, Path(target))
    state.say(
        done,
        f"recovered positions 1..{done.kept_until} ({done.events} events) into "
        f"{done.directory}; the chain broke at {done.first_bad_position}: {done.reason}. "
        f"{done.source} is left as it was.",
    )


@cli.command()
@click.pass_obj
def demo(state: State) -> None:
    """Play a short story: facts learned, an employer change, a late fact, history, verify.

    It only ever writes to a new directory: a fresh temporary one, or --db given on the
    command line if that does not exist yet or is empty (a non-empty one is refused).
    $APEXMEM_HOME is never used: the demo must not add its story to your memory.

    Example: apexmem demo   (or: apexmem demo --db ./demo-mem)
    """
    from apexmem.cli.demo import run_demo
    from apexmem.memory import Memory

    if state.db_given:
        directory = _new_directory(state.directory())
    else:
        directory = Path(tempfile.mkdtemp(prefix="apexmem-demo-"))
    with Memory.open(directory) as memory:
        result = run_demo(memory, _demo_printer(state))
    if state.as_json:
        from apexmem.cli.render import emit_json

        emit_json({"directory": str(directory), **result})
    elif not result["verify"].ok:
        sys.exit(1)


def _new_directory(directory: Path) -> Path:
    """`directory`, made if absent; refused if it already holds anything."""
    if directory.is_dir() and any(directory.iterdir()):
        raise ValidationError(
            "--db",
            str(directory),
            "is not empty; the demo only writes to a new or empty directory "
            "(leave --db out for a temporary one)",
        )
    return usable_directory(directory)


def _demo_printer(state: State) -> Any:
    from apexmem.cli.render import console, facts_table, history_table

    def say(kind: str, payload: Any) -> None:
        if state.as_json:
            return
        if kind == "step":
            console.print(payload)
        elif kind == "facts":
            console.print(facts_table(payload, "current facts"))
        elif kind == "history":
            console.print(history_table(payload, "history of Alice works_at (one slot)"))
        elif kind == "verify":
            console.print(
                f"verify: ok={payload.ok}, {payload.events_checked} events checked, "
                f"chain head {payload.head}"
            )

    return say


def _settings_toml(settings: Any) -> str:
    lines = ["# apexmem settings; every key shows its default. See README.md, section Settings."]
    lines += _toml_section("memory", msgspec_to_dict(settings.memory))
    return "\n".join(lines) + "\n"


def msgspec_to_dict(value: Any) -> dict[str, Any]:
    """A Struct as nested plain dicts."""
    import msgspec

    result: dict[str, Any] = msgspec.to_builtins(value)
    return result


def _toml_section(name: str, values: dict[str, Any]) -> list[str]:
    import json

    lines = ["", f"[{name}]"]
    nested = []
    for key, value in values.items():
        if isinstance(value, dict):
            nested.append((key, value))
        elif value is None:  # TOML has no null: an unset key is shown commented out
            lines.append(f"# {key} = (unset)")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    for key, value in nested:
        lines += _toml_section(f"{name}.{key}", value)
    return lines


for _command in (
    alias,
    assert_command,
    backfill,
    communities,
    decay_rate,
    decay,
    decay_usage,
    diff,
    entities,
    episode,
    episodes,
    evict,
    export,
    fact_graph,
    facts,
    forget,
    link,
    link_notes,
    mcp_command,
    merge,
    merges,
    migrate,
    project,
    rebuild,
    recall,
    replay,
    retract,
    serve,
    stats,
    status,
    tenants,
    timeline,
    traverse,
):
    cli.add_command(_command)
for _command in cli.commands.values():
    accept_global_options(_command)


def main() -> None:
    """Entry point: run the CLI, turning apexmem's errors into a message and an exit status:
    1 when a name or id names nothing, 2 for bad input (docs/reference/cli.md lists them)."""
    try:
        cli(standalone_mode=True)
    except ApexmemError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1 if isinstance(e, NotFoundError) and not isinstance(e, NoMemory) else 2)
    except OSError as e:  # a settings or index file the disk had no room for
        if not is_full(e):
            raise
        said = full_disk(e.filename, e) if e.filename else f"the disk is full ({e.strerror})"
        click.echo(f"error: {said}", err=True)
        sys.exit(2)
