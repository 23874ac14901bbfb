"""Commands: what a caller asks the memory to do, validated at the edge before anything is read."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Annotated, Any, Final, Literal, TypeVar
from uuid import UUID

import msgspec

from apexmem.domain.links import parse_link_type, parse_strength
from apexmem.domain.names import MAX_INPUT_NAME_BYTES
from apexmem.domain.text import require_utf8
from apexmem.events.base import (
    MAX_FACT_BYTES,
    MAX_REF_BYTES,
    MAX_SUMMARY_BYTES,
    MAX_TEXT_BYTES,
    Probability,
)
from apexmem.events.errors import ValidationError
from apexmem.events.link import LinkOrigin
from apexmem.events.timeutil import UtcDateTime, require_aware

__all__ = [
    "TOO_DEEP",
    "AddAlias",
    "AssertFact",
    "Command",
    "LinkFacts",
    "MapRelation",
    "MergeEntities",
    "ObserveEntity",
    "RecordMessage",
    "RetractFact",
    "SetDecayRate",
    "build",
    "build_many",
    "decode_command",
    "validated",
]


_Name = Annotated[str, msgspec.Meta(max_length=MAX_INPUT_NAME_BYTES)]
_Ref = Annotated[str, msgspec.Meta(max_length=MAX_REF_BYTES)]


# gc=False, as on events (events.base.Event): commands are plain values made by the thousand
# per batch. Tracked, a batch's commands outlived the collections its own allocations ran
# and were promoted to the oldest generation; every twenty batches or so that growth set
# off a full collection of the whole process (70-110 ms; one fewer per 100,000 facts now).
class _Command(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    tag_field="op",
    forbid_unknown_fields=True,
    gc=False,
):
    actor: _Ref | None = None
    episode: _Ref | None = None


class AssertFact(_Command, frozen=True, kw_only=True, tag="assert"):
    """Assert a fact: subject -relation-> object (an entity), or -> value, or a note (neither)."""

    subject: _Name
    subject_type: str = "concept"
    relation: str
    object: _Name | None = None
    object_type: str = "concept"
    value: str | None = None
    edge_type: str = "semantic"
    fact: str | None = None
    confidence: Probability = 1.0
    valid_from: UtcDateTime | None = None
    valid_until: UtcDateTime | None = None
    observed_at: UtcDateTime | None = None
    ref: _Ref | None = None


class ObserveEntity(_Command, frozen=True, kw_only=True, tag="entity"):
    """Make sure an entity exists, optionally with a (new) summary."""

    name: _Name
    entity_type: str = "concept"
    summary: str | None = None


class AddAlias(_Command, frozen=True, kw_only=True, tag="alias"):
    """Give an entity another name of its type (the first claim of a name wins)."""

    entity: _Name
    entity_type: str = "concept"
    alias: _Name


class RetractFact(_Command, frozen=True, kw_only=True, tag="retract"):
    """End a fact version at `valid_until`, or withdraw it as never true when that is None."""

    fact_id: UUID
    valid_until: UtcDateTime | None = None
    reason: _Ref = "retracted"


class RecordMessage(_Command, frozen=True, kw_only=True, tag="message"):
    """Store one message of a conversation (the episode) verbatim."""

    speaker: _Name
    text: str
    at: UtcDateTime | None = None
    ref: _Ref | None = None


class MergeEntities(_Command, frozen=True, kw_only=True, tag="merge"):
    """Merge an entity forward into another of the same type."""

    source: _Name
    target: _Name
    entity_type: str = "concept"
    reason: _Ref | None = None


class SetDecayRate(_Command, frozen=True, kw_only=True, tag="decay-rate"):
    """Set the confidence decay rate (per day) of one edge type."""

    edge_type: str
    rate: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)]


class MapRelation(_Command, frozen=True, kw_only=True, tag="map-relation"):
    """Teach the ontology a canonical relation, its aliases and its cardinality."""

    canonical: str
    aliases: list[str] = []
    cardinality: Literal["one", "many"] = "many"


class LinkFacts(_Command, frozen=True, kw_only=True, tag="link"):
    """Link fact `source` to fact `target`: it supersedes, is caused by, is part of, is
    related to or depends on it (`link_type`, any case), with `strength` in (0, 1]."""

    source: UUID
    target: UUID
    link_type: str
    strength: float = 1.0
    origin: LinkOrigin = "told"
    """told (by a caller), or co-occurrence (the usage pass's, as an export carries it)."""
    recalls: Annotated[int, msgspec.Meta(ge=0)] = 0
    """For a co-occurrence link: the recalls that returned both facts."""


Command = (
    AssertFact
    | ObserveEntity
    | AddAlias
    | RetractFact
    | RecordMessage
    | MergeEntities
    | SetDecayRate
    | MapRelation
    | LinkFacts
)
"""Every command, tagged by `op` in JSON lines."""

C = TypeVar("C", bound=_Command)
_AT_FIELD = re.compile(r"- at `\$\.?([^`]*)`")
_REF_FIELDS = ("actor", "episode", "ref", "reason")
_BYTE_LIMITS = {
    "fact": MAX_FACT_BYTES,
    "summary": MAX_SUMMARY_BYTES,
    "text": MAX_TEXT_BYTES,
    "value": MAX_FACT_BYTES,
    "speaker": MAX_INPUT_NAME_BYTES,  # entity names: domain.names.canonical_name
    **dict.fromkeys(_REF_FIELDS, MAX_REF_BYTES),
}
"""Limits in UTF-8 bytes; msgspec's `max_length` on the types counts characters."""
_command_decoder = msgspec.json.Decoder(Command)
TOO_DEEP: Final = "is not valid JSON here: arrays and objects nested too deeply to decode"
"""The rule when msgspec's depth limit (the interpreter's recursion limit) is reached."""


def build(kind: type[C], fields: Mapping[str, Any]) -> C:
    """Validate `fields` into a command, or raise ValidationError naming field, value and rule."""
    for name, value in fields.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationError(name, value, "is not a finite number")
    try:
        command = msgspec.convert(dict(fields), kind)
    except msgspec.ValidationError as e:
        raise _translate(e, fields) from e
    return _check(command)


def build_many(kind: type[C], items: Sequence[Mapping[str, Any]]) -> list[C]:
    """`build` for many commands of one kind; a ValidationError's field starts `[index].`.

    Plain dicts are converted in one msgspec call (about eight times faster than one call
    each); when that fails, each item is built alone, so the error is the one `build` gives.
    """
    if all(type(item) is dict for item in items):
        try:
            commands = msgspec.convert(items, list[kind])  # type: ignore[valid-type]
        except msgspec.ValidationError:
            pass
        else:
            floats = _float_fields(kind)
            for i, command in enumerate(commands):
                try:
                    _check_floats(command, floats)
                    _check(command)
                except ValidationError as e:
                    raise _at(i, e) from e
            return commands
    built = []
    for i, item in enumerate(items):
        try:
            built.append(build(kind, item))
        except ValidationError as e:
            raise _at(i, e) from e
    return built


def validated(commands: Sequence[object]) -> list[Command]:
    """Commands made by their constructors, validated as `build` validates fields.

    A struct's constructor checks neither types nor constraints (`AssertFact(confidence=5.0)`
    is made as asked), and an event made from such a command would be appended and then fail
    to decode on every read. A ValidationError's field starts `[index].` for more than one.
    """
    checked: list[Command] = []
    for i, command in enumerate(commands):
        try:
            if not isinstance(command, _Command):
                raise ValidationError(
                    "command", _clip(repr(command)), "is not a command (AssertFact, AddAlias, ...)"
                )
            checked.append(build(type(command), msgspec.structs.asdict(command)))  # type: ignore[arg-type]
        except ValidationError as e:
            if len(commands) == 1:
                raise
            raise _at(i, e) from e
    return checked


def _at(index: int, error: ValidationError) -> ValidationError:
    return ValidationError(f"[{index}].{error.field}", error.value, error.rule)


def _float_fields(kind: type) -> tuple[str, ...]:
    return _fields_holding(kind, msgspec.inspect.FloatType)


@cache
def _fields_holding(kind: type, held: type[msgspec.inspect.Type]) -> tuple[str, ...]:
    """The fields of the struct `kind` whose type is, or is a union holding, a `held`."""
    info = msgspec.inspect.type_info(kind)
    assert isinstance(info, msgspec.inspect.StructType)
    return tuple(f.name for f in info.fields if _holds(f.type, held))


def _holds(kind: msgspec.inspect.Type, held: type[msgspec.inspect.Type]) -> bool:
    if isinstance(kind, msgspec.inspect.UnionType):
        return any(_holds(t, held) for t in kind.types)
    return isinstance(kind, held)


def _check_floats(command: Any, names: tuple[str, ...]) -> None:
    """What `build` checks before converting: no NaN or infinite number in a float field."""
    for name in names:
        value = getattr(command, name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationError(name, value, "is not a finite number")


def decode_command(line: bytes | str) -> Command:
    """Decode one JSON line into a command (tagged by `op`), validated like `build`."""
    try:
        command: Command = _command_decoder.decode(line)
    except msgspec.ValidationError as e:
        raise _translate(e, _fields_of(line)) from e
    except msgspec.DecodeError as e:
        raise ValidationError("line", _clip(line), f"is not valid JSON ({e})") from e
    except RecursionError as e:  # msgspec's depth limit is the interpreter's recursion limit
        raise ValidationError("line", _clip(line), TOO_DEEP) from e
    for name in ("confidence", "rate", "strength"):
        value = getattr(command, name, None)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationError(name, value, "is not a finite number")
    return _check(command)


def _fields_of(line: bytes | str) -> Mapping[str, Any] | None:
    """A line's top-level fields, so an error can name the bad value (None if not an object)."""
    try:
        fields = msgspec.json.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    return fields if isinstance(fields, dict) else None


def _check(command: C) -> C:
    limits, times, texts, text_lists = _checked_fields(type(command))
    for name in texts:  # first: a byte limit's `encode` would fail on a lone surrogate
        value = getattr(command, name)
        if value is not None and not value.isascii():  # isascii reads a flag: cheap
            require_utf8(name, value)
    for name in text_lists:
        for i, item in enumerate(getattr(command, name)):
            require_utf8(f"{name}[{i}]", item)
    for name, limit in limits:
        value = getattr(command, name)
        # A character is at most 4 UTF-8 bytes: only long strings need encoding to tell.
        if isinstance(value, str) and len(value) * 4 > limit and len(value.encode()) > limit:
            raise ValidationError(name, _clip(value), f"is longer than {limit} bytes")
    for name in times:
        value = getattr(command, name)
        if value is not None and value.year in (1, 9999):  # only these can leave the range
            require_aware(name, value)
    if isinstance(command, AssertFact):
        _check_assert(command)
    if isinstance(command, LinkFacts):
        _check_link(command)
    if isinstance(command, RecordMessage) and not command.text.strip():
        raise ValidationError("text", command.text, "is empty")
    return command


@cache
def _checked_fields(
    kind: type,
) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The fields of `kind` with a byte limit (and the limit), those holding a time, those
    holding text, and those holding a list of texts.

    Only fields the kind has: looking up one a struct lacks raises and catches an
    AttributeError inside `getattr`, slow once per command.
    """
    fields = msgspec.structs.fields(kind)
    limits = tuple((f.name, _BYTE_LIMITS[f.name]) for f in fields if f.name in _BYTE_LIMITS)
    info = msgspec.inspect.type_info(kind)
    assert isinstance(info, msgspec.inspect.StructType)
    text_lists = tuple(
        f.name
        for f in info.fields
        if isinstance(f.type, msgspec.inspect.ListType)
        and isinstance(f.type.item_type, msgspec.inspect.StrType)
    )
    return (
        limits,
        _fields_holding(kind, msgspec.inspect.DateTimeType),
        _fields_holding(kind, msgspec.inspect.StrType),
        text_lists,
    )


def _check_assert(command: AssertFact) -> None:
    if command.object is not None and command.value is not None:
        raise ValidationError("value", command.value, "cannot be given together with object")
    if (
        command.valid_from is not None
        and command.valid_until is not None
        and command.valid_until <= command.valid_from
    ):
        raise ValidationError(
            "valid_until", command.valid_until, f"is not after valid_from {command.valid_from}"
        )


def _check_link(command: LinkFacts) -> None:
    parse_link_type("link_type", command.link_type)
    parse_strength("strength", command.strength)
    if command.source == command.target:
        raise ValidationError(
            "target", str(command.target), "is the source fact itself (a fact links to another)"
        )


def _translate(error: msgspec.ValidationError, fields: Mapping[str, Any] | None) -> ValidationError:
    message = str(error)
    match = _AT_FIELD.search(message)
    field = match.group(1) if match else "command"
    rule = _AT_FIELD.sub("", message).strip()
    top = field.split(".")[0].split("[")[0]
    value: object = fields.get(top) if fields is not None else None
    if "Object missing required field" in rule:
        missing = rule.split("`")[1] if "`" in rule else field
        return ValidationError(
            missing if field == "command" else f"{field}.{missing}", None, "is required"
        )
    if "Object contains unknown field" in rule:
        unknown = rule.split("`")[1] if "`" in rule else field
        given = fields.get(unknown) if fields is not None and field == "command" else None
        return ValidationError(unknown, given, "is not a known field of this command")
    if "timezone component" in rule:
        return ValidationError(
            field, value, "is a naive datetime; give a timezone, e.g. 2024-01-01T00:00:00Z"
        )
    return ValidationError(
        field, value, f"is invalid: {rule[0].lower()}{rule[1:]}" if rule else "is invalid"
    )


def _clip(value: str | bytes) -> str:
    text = value.decode(errors="replace") if isinstance(value, bytes) else value
    return text if len(text) <= 60 else text[:57] + "..."
