"""The event catalogue reference (docs/reference/events.md), generated from the event union.

Regenerate with `python -m apexmem.events.reference > docs/reference/events.md`;
`python -m apexmem.events.reference --check` exits 1 when the file is stale.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec
import msgspec.inspect as mi

from apexmem.events.base import Event
from apexmem.events.catalogue import STREAM_KINDS
from apexmem.events.codec import Stored

__all__ = ["DEFAULT_PATH", "REGENERATE", "main", "render_markdown", "render_type"]

DEFAULT_PATH: Final = "docs/reference/events.md"
"""Where the generated reference lives, relative to the repository root."""
REGENERATE: Final = f"python -m apexmem.events.reference > {DEFAULT_PATH}"
"""The command that rewrites the reference."""

_ENVELOPE_MEANINGS: Final[dict[str, str]] = {
    "recorded_at": "Transaction time, set by the log at append; never decreases in log order.",
    "actor": "The agent that asked for the change.",
    "episode": "Provenance: the episode (conversation) the event came from.",
    "cause": "Idempotency key of the request; appending the same key again writes nothing.",
    "data": "The event payload; its `type` key holds the tag.",
}

_SIMPLE_NAMES: Final[dict[type[mi.Type], str]] = {
    mi.AnyType: "Any",
    mi.NoneType: "None",
    mi.BoolType: "bool",
    mi.UUIDType: "UUID",
    mi.DateType: "date",
    mi.TimeDeltaType: "timedelta",
    mi.DecimalType: "Decimal",
    mi.BytesType: "bytes",
    mi.ByteArrayType: "bytearray",
    mi.MemoryViewType: "memoryview",
    mi.RawType: "Raw",
    mi.ExtType: "Ext",
}

_COLLECTION_SHAPES: Final[dict[type[mi.Type], str]] = {
    mi.ListType: "list[{}]",
    mi.SetType: "set[{}]",
    mi.FrozenSetType: "frozenset[{}]",
    mi.VarTupleType: "tuple[{}, ...]",
}

_EMPTY_FACTORIES: Final[tuple[Callable[[], object], ...]] = (list, dict, set, frozenset, tuple)


def render_markdown() -> str:
    """The whole reference page, deterministic for a given catalogue."""
    return "\n".join(_page()) + "\n"


def render_type(t: mi.Type) -> str:
    """A field type as a reader would write it: `UUID`, `str | None`, `float in [0, 1]`."""
    if isinstance(t, mi.Metadata):
        return render_type(t.type)
    if isinstance(t, mi.UnionType):
        return " | ".join(render_type(member) for member in t.types)
    if isinstance(t, mi.LiteralType):
        return " | ".join(_literal(value) for value in t.values)
    return _scalar(t)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the reference, or with `--check [PATH]` exit 1 when PATH is stale."""
    parser = argparse.ArgumentParser(
        prog="python -m apexmem.events.reference",
        description=f"Print the event catalogue reference. Regenerate with: {REGENERATE}",
    )
    parser.add_argument(
        "--check",
        nargs="?",
        const=DEFAULT_PATH,
        metavar="PATH",
        help=f"exit 1 if PATH (default {DEFAULT_PATH}) differs from the generated text",
    )
    args = parser.parse_args(argv)
    text = render_markdown()
    if args.check is None:
        sys.stdout.write(text)
        return 0
    path = Path(args.check)
    current = path.read_text(encoding="utf-8") if path.is_file() else None
    if current == text:
        return 0
    state = "is missing" if current is None else "is stale"
    sys.stderr.write(f"{path} {state}; regenerate it with: {REGENERATE}\n")
    return 1


def _page() -> Iterator[str]:
    yield "# Event catalogue"
    yield ""
    yield f"<!-- Generated from apexmem.events.catalogue; do not edit. Run: {REGENERATE} -->"
    yield ""
    yield from _envelope()
    yield from _evolution()
    yield from _overview()
    for kind, classes in STREAM_KINDS.items():
        yield f"## {kind.capitalize()} stream"
        yield ""
        for cls in classes:
            yield from _event(cls)


def _envelope() -> Iterator[str]:
    yield "## Stored form"
    yield ""
    yield "Every event is one eventsourcing `StoredEvent` record:"
    yield ""
    yield "- `originator_id`: the stream's UUID, derived from what the stream is about, stored as"
    yield "  its 16 bytes (logs made before stored 32 hex digits, and still do;"
    yield "  `apexmem.events.storedids`);"
    yield "- `originator_version`: the event's version in its stream, from 1;"
    yield "- `topic`: the event's versioned tag (`fact-asserted.v1`), never a Python import path;"
    yield "- `state`: the envelope below (`apexmem.events.codec.Stored`) as deterministic JSON,"
    yield "  the bytes the hash chain covers."
    yield ""
    yield "Keys appear in field declaration order, the payload's `type` (its tag) first; fields"
    yield "equal to their default are left out, in the envelope and in the payload. Times are"
    yield "RFC 3339 strings (`2024-05-14T09:30:00.123456Z`). Golden payloads of every tag are in"
    yield "`tests/golden/events/`."
    yield ""
    yield "| field | type | default | meaning |"
    yield "|---|---|---|---|"
    for field in _fields(Stored):
        meaning = _ENVELOPE_MEANINGS[field.name]
        yield f"| `{field.encode_name}` | {_type_cell(field)} | {_default(field)} | {meaning} |"
    yield ""


def _evolution() -> Iterator[str]:
    yield "## Changing an event"
    yield ""
    yield "A released event class is never edited: records already in the log must keep decoding"
    yield "to what they meant. To change an event, either add a field with a default (old records"
    yield "decode with the default), or add a new class tagged `name.v2`. When the `.v1` class is"
    yield "retired, register an upcaster (`apexmem.events.codec.register_upcaster`) that turns a"
    yield "stored `.v1` record into `.v2` bytes; tags that still have a class cannot be upcast."
    yield "A decoder never guesses: a tag with neither a class nor an upcaster is an"
    yield "`IntegrityViolation`."
    yield ""


def _overview() -> Iterator[str]:
    yield "## Streams"
    yield ""
    yield "| stream | events |"
    yield "|---|---|"
    for kind, classes in STREAM_KINDS.items():
        yield f"| {kind} | {', '.join(f'`{_tag(cls)}`' for cls in classes)} |"
    yield ""


def _event(cls: type[Event]) -> Iterator[str]:
    yield f"### `{_tag(cls)}`"
    yield ""
    yield f"`{cls.__name__}` in `{cls.__module__}`: {_summary(cls)}"
    yield ""
    yield "| field | type | default |"
    yield "|---|---|---|"
    for field in _fields(cls):
        yield f"| `{field.encode_name}` | {_type_cell(field)} | {_default(field)} |"
    yield ""


def _fields(cls: type[msgspec.Struct]) -> tuple[mi.Field, ...]:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType), f"{cls.__name__} is not a Struct"
    return info.fields


def _tag(cls: type[Event]) -> str:
    tag = cls.__struct_config__.tag
    assert isinstance(tag, str), f"{cls.__name__} has no tag"
    return tag


def _summary(cls: type[Event]) -> str:
    # cls.__doc__, not inspect.getdoc: an undocumented event must not borrow Event's docstring.
    doc = cls.__doc__
    if not doc:
        return "*No docstring.*"
    return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())


def _type_cell(field: mi.Field) -> str:
    rendered = render_type(field.type).replace("|", "\\|")
    return f"`{rendered}`"


def _default(field: mi.Field) -> str:
    if field.required:
        return "required"
    if field.default is not msgspec.NODEFAULT:
        return f"`{_literal(field.default)}`"
    factory = field.default_factory
    if factory in _EMPTY_FACTORIES:
        return f"`{factory()!r}`"
    return f"`{getattr(factory, '__qualname__', repr(factory))}()`"


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return msgspec.json.encode(value).decode()
    return repr(value)


def _number(t: mi.IntType | mi.FloatType) -> str:
    name = "int" if isinstance(t, mi.IntType) else "float"
    low = ("[", t.ge) if t.ge is not None else ("(", t.gt)
    high = ("]", t.le) if t.le is not None else (")", t.lt)
    if low[1] is not None and high[1] is not None:
        text = f"{name} in {low[0]}{_num(low[1])}, {_num(high[1])}{high[0]}"
    elif low[1] is not None:
        text = f"{name} {'>=' if low[0] == '[' else '>'} {_num(low[1])}"
    elif high[1] is not None:
        text = f"{name} {'<=' if high[0] == ']' else '<'} {_num(high[1])}"
    else:
        text = name
    return text if t.multiple_of is None else f"{text}, multiple of {_num(t.multiple_of)}"


def _clock_time(t: mi.DateTimeType | mi.TimeType) -> str:
    base = "datetime" if isinstance(t, mi.DateTimeType) else "time"
    if t.tz is None:
        return base
    # The log stores aware times in UTC (events.timeutil.require_aware converts at the edge).
    return f"{base} (UTC, aware)" if t.tz else f"{base} (naive)"


def _num(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def _length(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f" (length {low} to {high})"
    if low is not None:
        return f" (length >= {low})"
    if high is not None:
        return f" (length <= {high})"
    return ""


def _scalar(t: mi.Type) -> str:
    if isinstance(t, mi.DateTimeType | mi.TimeType):
        return _clock_time(t)
    if isinstance(t, mi.IntType | mi.FloatType):
        return _number(t)
    if isinstance(t, mi.StrType):
        pattern = "" if t.pattern is None else f" matching {_literal(t.pattern)}"
        return "str" + _length(t.min_length, t.max_length) + pattern
    return _container(t)


def _container(t: mi.Type) -> str:
    simple = _SIMPLE_NAMES.get(type(t))
    if simple is not None:
        return simple
    if isinstance(t, mi.CollectionType):
        shape = _COLLECTION_SHAPES.get(type(t), "collection[{}]")
        return shape.format(render_type(t.item_type)) + _length(t.min_length, t.max_length)
    if isinstance(t, mi.TupleType):
        return f"tuple[{', '.join(render_type(item) for item in t.item_types)}]"
    if isinstance(t, mi.DictType | mi.FrozenDictType):
        name = "dict" if isinstance(t, mi.DictType) else "frozendict"
        return f"{name}[{render_type(t.key_type)}, {render_type(t.value_type)}]"
    cls = getattr(t, "cls", None)
    return cls.__name__ if isinstance(cls, type) else type(t).__name__.removesuffix("Type")


if __name__ == "__main__":
    raise SystemExit(main())
