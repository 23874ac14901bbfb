"""What every command shares: the chosen directory, `--json`, and the way out for a missing name."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from apexmem.config import EVENTS_FILE, holds_memory, home
from apexmem.events.errors import NotFoundError, ValidationError
from apexmem.location import Location

if TYPE_CHECKING:
    from apexmem.memory import Memory

__all__ = [
    "NoMemory",
    "State",
    "accept_global_options",
    "existing_memory",
    "no_entity",
    "pass_state",
    "usable_directory",
]


class NoMemory(NotFoundError):
    """No memory where --db points: the place is wrong (exit status 2), not a lookup that
    found nothing (exit status 1)."""


class State:
    """The global options: `--db` and `--json`.

    `db_given` says whether `--db` was given on the command line (not taken from
    $APEXMEM_HOME): `demo` only ever writes to a directory named that way.
    """

    def __init__(self, db: str | None, as_json: bool, *, db_given: bool = False) -> None:
        self.db = db
        self.as_json = as_json
        self.db_given = db_given

    def location(self, db: str | None = None) -> Location:
        """Where the memory is: `db` (a command's own --db) if given, else the global --db
        or $APEXMEM_HOME, else ~/.apexmem; a directory or a PostgreSQL URL.

        An empty value is refused: an unset shell variable must not pick the default home.
        """
        chosen = db if db is not None else self.db
        if chosen == "":
            raise ValidationError("--db", chosen, "is empty; name a directory, or leave --db out")
        if chosen is None and os.environ.get("APEXMEM_HOME") == "":
            raise ValidationError(
                "APEXMEM_HOME", "", "is empty; name a directory, or unset it for ~/.apexmem"
            )
        return home(chosen)

    def directory(self, db: str | None = None) -> Path:
        """The memory directory, for commands that work on files; a URL is refused by name."""
        location = self.location(db)
        if location.on_postgres:
            raise ValidationError(
                "--db", str(location), "names a database; this command needs a directory"
            )
        return location.directory

    def open(self, *, create: bool = False) -> Memory:
        """The memory at the chosen place.

        Only commands that add to a memory (`init`, `ingest`, `decay-rate --rate`) pass
        `create=True` and get one made if absent; every other command reads or maintains
        what is there, so a place without a memory is refused and nothing is created.
        """
        from apexmem.memory import Memory

        location = self.location()
        if location.on_postgres:
            return Memory.open(location if create else existing_memory(location), create=create)
        if create:
            return Memory.open(usable_directory(location.directory))
        return Memory.open(existing_memory(location).directory, create=False)

    def say(self, value: Any, text: str) -> None:
        """`value` as JSON under `--json`, else `text` for people."""
        from apexmem.cli.render import console, emit_json

        if self.as_json:
            emit_json(value)
        else:
            console.print(text)


pass_state = click.make_pass_decorator(State)
"""Hands a command the State the group made."""


def accept_global_options(command: click.Command) -> None:
    """Let `--db` and `--json` follow the command name too (`apexmem log --json`), unless
    the command has an option of that name itself; given there, they override the group's."""
    taken = {name for param in command.params for name in param.opts}
    if "--db" not in taken:
        command.params.append(
            click.Option(
                ["--db"],
                metavar="DIR",
                expose_value=False,
                callback=_set_db,
                help="Memory directory (as `apexmem --db DIR`).",
            )
        )
    if "--json" not in taken:
        command.params.append(
            click.Option(
                ["--json"],
                is_flag=True,
                expose_value=False,
                callback=_set_json,
                help="Print JSON for programs (as `apexmem --json`).",
            )
        )


def _set_db(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    state = ctx.find_object(State)
    if value is not None and state is not None:
        state.db = value
        state.db_given = True


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    state = ctx.find_object(State)
    if value and state is not None:
        state.as_json = True


def usable_directory(directory: Path) -> Path:
    """`directory`, created if absent; a file or a path that cannot be made is refused by name."""
    if directory.exists() and not directory.is_dir():
        raise ValidationError("--db", str(directory), "is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValidationError("--db", str(directory), f"cannot be created ({e.strerror})") from e
    return directory


def existing_memory(location: Location) -> Location:
    """`location` if it holds a memory (`apexmem.config.holds_memory`); else refused by name,
    with the way to create one (exit status 2), and nothing is created."""
    directory = location.directory
    if not location.on_postgres and directory.exists() and not directory.is_dir():
        raise ValidationError("--db", str(directory), "is a file, not a directory")
    if not holds_memory(location):
        where = "no log there" if location.on_postgres else f"no {EVENTS_FILE} there"
        raise NoMemory(
            f"no memory in {location} ({where}); check --db and "
            f"APEXMEM_HOME, or create one with `apexmem --db {location.url or directory} init`"
        )
    return location


def no_entity(
    name: str, entity_type: str | None = None, known_at: datetime | None = None
) -> NoReturn:
    """Say that no entity answers to `name` (on stderr) and exit 1: a lookup, not an error."""
    from apexmem.cli.render import errors, moment

    text = f"no entity named {name!r}"
    if entity_type is not None:
        text += f" of type {entity_type}"
    if known_at is not None:
        text += f" known at {moment(known_at)}"
    errors.print(text)
    sys.exit(1)
