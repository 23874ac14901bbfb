"""The generated reference pages: every CLI command, and every settings key with its default
and range. Run `python -m apexmem.cli.reference` from the repository root to write them;
tests/docs/test_generated_references.py fails when a page is stale.

Both are read from the code itself (the click commands; the settings structs, with the
docstrings under their fields), so a command or key added without a line here cannot be
left out of the docs.
"""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path
from typing import Any, Final

import click
import msgspec

__all__ = ["CLI_PATH", "SETTINGS_PATH", "main", "render_cli", "render_settings"]

CLI_PATH: Final = Path("docs/reference/cli.md")
SETTINGS_PATH: Final = Path("docs/reference/settings.md")
REGENERATE: Final = "python -m apexmem.cli.reference"
_HEADER: Final = f"<!-- Generated from the code; do not edit. Run: {REGENERATE} -->"

_OUTPUT: Final = [
    "Ids: a fact's id is printed short, as `f91955cd:3` (its slot's first 8 hex digits and",
    "the version), and every option or argument that takes an id takes that form too, or any",
    "unique prefix of the whole id; an ambiguous one is refused with the ids it could mean.",
    "",
    "Output: on a terminal, tables fit its width; piped or redirected, rows are never folded",
    "(one row a line, whole words), and `--json` gives JSON for programs.",
    "",
    "Exit status, the same for every command:",
    "",
    "| status | meaning |",
    "|---|---|",
    "| 0 | done |",
    "| 1 | found nothing or not holding: a name or id that names nothing, `verify` finding a "
    "break, `ingest` with lines that failed |",
    "| 2 | bad input, nothing written: an option's value (the error names the option or field, "
    "the value and the rule), a usage error, no memory where `--db` points, a read-only or "
    "full disk |",
    "",
]
"""What holds for every command: short ids, piped output, exit statuses."""


def render_cli() -> str:
    """Markdown for every command of `apexmem`: usage, help, options."""
    from apexmem.cli.main import cli

    lines = ["# Command line reference", "", _HEADER, ""]
    lines += [
        "Global options, before or after the command: `--db DIR|URL` (or `APEXMEM_HOME`) picks",
        "the memory, `--json` prints JSON for programs. Times are ISO 8601 with a zone, or",
        "`YYYY-MM-DD HH:MM:SS` read as UTC. Every command also has `--help`.",
        "",
        *_OUTPUT,
    ]
    context = click.Context(cli, info_name="apexmem")
    for name in sorted(cli.commands):
        lines += _command(cli.commands[name], name, context)
    return "\n".join(lines).rstrip() + "\n"


def _command(command: click.Command, name: str, parent: click.Context) -> list[str]:
    context = click.Context(command, info_name=name, parent=parent)
    usage = " ".join(command.collect_usage_pieces(context))
    lines = [f"## `apexmem {name}`", "", f"    apexmem {name} {usage}".rstrip(), ""]
    lines += [inspect.cleandoc(command.help or ""), ""]
    options = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
    options = [p for p in options if p.expose_value]  # not the global --db and --json again
    if options:
        lines += ["| option | meaning |", "|---|---|"]
        for option in options:
            record = option.get_help_record(context)
            if record is not None:
                flags, text = record
                lines.append(f"| `{_cell(flags)}` | {_cell(text)} |")
        lines.append("")
    return lines


def render_settings() -> str:
    """Markdown for every key of `apexmem.toml`: its section, type, default, range, meaning."""
    from apexmem.domain import settings

    notes = _field_notes(inspect.getsource(settings))
    lines = ["# Settings reference", "", _HEADER, ""]
    lines += [
        "`<memory dir>/apexmem.toml` (for a PostgreSQL memory, in its cache directory);",
        "`apexmem init` writes every key with its default. An unknown key, or a value out of its",
        "range, is refused with an error naming the key. `APEXMEM_TOKEN` overrides",
        "`[server] token`.",
        "",
    ]
    for section, struct in _sections(settings.Settings, ""):
        info = msgspec.inspect.type_info(struct)
        assert isinstance(info, msgspec.inspect.StructType)
        plain = [f for f in info.fields if not _is_struct(f.type)]
        if not plain:
            continue
        doc = inspect.getdoc(struct) or ""
        lines += [f"## `[{section}]`", "", doc.split("\n")[0], ""]
        lines += ["| key | type | default | range | meaning |", "|---|---|---|---|---|"]
        for field in plain:
            note = notes.get((struct.__name__, field.name), "")
            lines.append(
                f"| `{field.name}` | {_type(field.type)} | `{_default(field.default)}` "
                f"| {_range(field.type)} | {_cell(note)} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _sections(struct: type, prefix: str) -> list[tuple[str, type]]:
    """Each settings struct with its TOML section name, parents first."""
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    found = [(prefix, struct)] if prefix else []
    for field in info.fields:
        if _is_struct(field.type):
            assert isinstance(field.type, msgspec.inspect.StructType)
            name = f"{prefix}.{field.name}" if prefix else field.name
            found += _sections(field.type.cls, name)
    return found


def _is_struct(kind: msgspec.inspect.Type) -> bool:
    return isinstance(kind, msgspec.inspect.StructType)


def _field_notes(source: str) -> dict[tuple[str, str], str]:
    """The docstring written under each field of each class, by (class, field)."""
    notes: dict[tuple[str, str], str] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        for field, after in zip(node.body, [*node.body[1:], None], strict=True):
            if (
                isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                notes[(node.name, field.target.id)] = inspect.cleandoc(after.value.value)
    return notes


def _type(kind: msgspec.inspect.Type) -> str:
    if isinstance(kind, msgspec.inspect.UnionType):
        shown = [_type(t) for t in kind.types if not isinstance(t, msgspec.inspect.NoneType)]
        return " or ".join(shown) + " (optional)"
    if isinstance(kind, msgspec.inspect.LiteralType):
        return " or ".join(f"`{v!r}`".replace("'", '"') for v in kind.values)
    names = {
        msgspec.inspect.BoolType: "bool",
        msgspec.inspect.IntType: "integer",
        msgspec.inspect.FloatType: "number",
        msgspec.inspect.StrType: "string",
    }
    return names.get(type(kind), type(kind).__name__)


def _range(kind: msgspec.inspect.Type) -> str:
    if isinstance(kind, msgspec.inspect.UnionType):
        return " ".join(_range(t) for t in kind.types if not _none(t)).strip()
    parts = []
    bounds = [("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")]
    for name, sign in bounds:
        value = getattr(kind, name, None)
        if value is not None:
            parts.append(f"{sign} {value:,}" if isinstance(value, int) else f"{sign} {value}")
    if getattr(kind, "max_length", None) is not None:
        parts.append(f"at most {kind.max_length} characters")  # type: ignore[attr-defined]
    if getattr(kind, "pattern", None) is not None:
        parts.append(f"matches `{kind.pattern}`")  # type: ignore[attr-defined]
    return ", ".join(parts)


def _none(kind: msgspec.inspect.Type) -> bool:
    return isinstance(kind, msgspec.inspect.NoneType)


def _default(value: Any) -> str:
    if value is None or value is msgspec.NODEFAULT:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return f"{value:_}".replace("_", "") if isinstance(value, int) else str(value)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def main(argv: list[str] | None = None) -> None:
    """Write both pages under the current directory (the repository root)."""
    del argv
    for path, text in ((CLI_PATH, render_cli()), (SETTINGS_PATH, render_settings())):
        path.write_text(text, encoding="utf-8")
        sys.stdout.write(f"wrote {path}\n")


if __name__ == "__main__":
    main()
