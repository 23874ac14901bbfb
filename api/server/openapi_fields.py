"""Every field and parameter of the OpenAPI document described, and limited to its fixed
values where it has them, from the same table as the MCP tools (`apexmem.wire_fields`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from litestar import Litestar
from litestar.enums import ParamType
from litestar.openapi.spec import OpenAPI, Operation, Parameter, Reference, Schema
from litestar.openapi.spec.enums import OpenAPIType

from apexmem.wire_fields import (
    BOUNDS,
    ENUMS,
    EXCLUSIVE,
    FIELDS,
    NAMED,
    NOT_BLANK,
    PATTERNS,
    TEXTS,
    VISIBLE,
    exclusive,
)

__all__ = ["describe_fields"]

_QUERIES: Final = {"factGraph": "FactGraphIn"}
"""The wire type a read's query parameters are converted into, where it has `PATTERNS`."""
_KEY: Final = r"^[!-~]{1,255}$"
"""An Idempotency-Key: 1 to 255 visible ASCII characters."""
_AS_OF: Final = ("as_of", ("known_at", "position"), (), ("known_at", "position"))
_GROUPS: Final[Mapping[str, tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]]] = {
    "history": ("asked", ("fact", "entity", "entity_type", "slot"), ("fact", "entity", "slot"), ()),
    "factsAbout": _AS_OF,
    "traverse": _AS_OF,
    "episodesOfEntity": _AS_OF,
}
"""Reads with a rule across some query parameters, by operation id: those parameters are one
form-exploded object parameter (OpenAPI 3's way to state such a rule; each is still sent as
its own `name=value`): its name, its members, exactly one of which, at most one of which."""


def describe_fields(api: Litestar) -> None:
    """Fill in the descriptions and enums of `api`'s OpenAPI document (built once, here)."""
    document: OpenAPI = api.openapi_schema
    schemas = document.components.schemas if document.components else None
    for kind, schema in (schemas or {}).items():
        if kind.endswith("In"):  # request types refuse unknown fields (forbid_unknown_fields)
            schema.additional_properties = False
        if kind in EXCLUSIVE and schema.schema_not is None:
            schema.schema_not = _schema(exclusive(*EXCLUSIVE[kind]))
        _patterns(PATTERNS.get(kind, {}), schema.properties or {})
        for name, prop in (schema.properties or {}).items():
            if isinstance(prop, Schema):  # a request's names need a visible character
                _field(name, prop, body=kind.endswith("In"))
    for item in (document.paths or {}).values():
        for operation in (item.get, item.post, item.put, item.patch, item.delete):
            if isinstance(operation, Operation):
                parameters = [p for p in operation.parameters or [] if isinstance(p, Parameter)]
                for parameter in parameters:
                    _parameter(parameter)
                group = _GROUPS.get(operation.operation_id or "")
                if group is not None:
                    _grouped(operation, *group)
                kind = _QUERIES.get(operation.operation_id or "", "")
                _patterns(PATTERNS.get(kind, {}), {p.name: p.schema for p in parameters})


def _grouped(
    operation: Operation,
    name: str,
    members: tuple[str, ...],
    one: tuple[str, ...],
    at_most_one: tuple[str, ...],
) -> None:
    """`members` as one object parameter `name` holding exactly one of `one` and at most
    one of `at_most_one`."""
    parameters = [p for p in operation.parameters or [] if isinstance(p, Parameter)]
    grouped = [p for p in parameters if p.param_in == ParamType.QUERY and p.name in members]
    properties: dict[str, Reference | Schema] = {}
    for parameter in grouped:
        given = [o for o in _options(parameter.schema) if o.type != OpenAPIType.NULL]
        outer = parameter.schema if isinstance(parameter.schema, Schema) else given[0]
        properties[parameter.name] = dataclasses.replace(  # absent, not null, when not given
            given[0],
            description=parameter.description,
            pattern=VISIBLE if parameter.name in NAMED else given[0].pattern,
            format=given[0].format or outer.format,
        )
    rule = f"exactly one of {', '.join(one)}" if one else f"at most one of {', '.join(at_most_one)}"
    kept: list[Parameter | Reference] = [p for p in parameters if p not in grouped]
    operation.parameters = [
        *kept,
        Parameter(
            name=name,
            param_in=ParamType.QUERY,
            required=bool(one),
            style="form",
            explode=True,
            description=f"{rule.capitalize()} (each is its own query parameter).",
            schema=Schema(
                type=OpenAPIType.OBJECT,
                properties=properties,
                additional_properties=False,
                one_of=[Schema(required=[m]) for m in one] or None,
                schema_not=Schema(required=list(at_most_one)) if at_most_one else None,
            ),
        ),
    ]


def _options(schema: Reference | Schema | None) -> list[Schema]:
    """A parameter's schema, or the options of a nullable one."""
    if not isinstance(schema, Schema):
        return []
    return [o for o in schema.one_of or [schema] if isinstance(o, Schema)]


def _patterns(patterns: Mapping[str, str], props: Mapping[str, object]) -> None:
    """The pattern each field of `patterns` takes in this request type."""
    for name, pattern in patterns.items():
        prop = props.get(name)
        if isinstance(prop, Schema) and prop.pattern is None:
            prop.pattern = pattern


def _schema(node: Mapping[str, Any]) -> Schema:
    """A plain JSON schema of `apexmem.wire_fields` (required string fields) as litestar's."""
    properties: dict[str, Reference | Schema] = {
        k: Schema(type=OpenAPIType(v["type"])) for k, v in node["properties"].items()
    }
    return Schema(required=list(node["required"]), properties=properties)


def _parameter(parameter: Parameter) -> None:
    if parameter.description is None and parameter.name in FIELDS:
        parameter.description = FIELDS[parameter.name]
    if isinstance(parameter.schema, Schema):
        _field(parameter.name, parameter.schema, body=False)
        if parameter.name == "Idempotency-Key":
            _options(parameter.schema)[0].pattern = _KEY


def _field(name: str, prop: Schema, *, body: bool) -> None:
    """Describe a field; in a request body, a name must show a visible character (the
    lookups' query parameters take any text)."""
    if prop.description is None and name in FIELDS:
        prop.description = FIELDS[name]
    if body and name in NAMED and prop.pattern is None:
        prop.pattern = VISIBLE
    elif body and name in TEXTS and prop.pattern is None:
        prop.pattern = NOT_BLANK
    _ranges(name, prop)
    if name in ENUMS:
        values = list(ENUMS[name])
        for option in [prop, *(prop.one_of or []), *(prop.any_of or [])]:
            if isinstance(option, Reference):
                continue
            if option.type == OpenAPIType.STRING and option.enum is None:
                option.enum = values
            elif (
                option.type == OpenAPIType.ARRAY
                and isinstance(option.items, Schema)
                and option.items.enum is None
            ):
                option.items.enum = values


def _ranges(name: str, prop: Schema) -> None:
    """The bounds of an integer field and the two items of a window."""
    if name in BOUNDS:
        low, high = BOUNDS[name]
        # A nullable position's integer option too; a nullable limit is left as GET
        # /v1/recall reads it (a repeated limit is not refused there).
        nullable = (prop.one_of or []) if name == "position" else []
        for option in [prop, *nullable]:
            if isinstance(option, Schema) and option.type == OpenAPIType.INTEGER:
                option.minimum = low if option.minimum is None else option.minimum
                option.maximum = high if option.maximum is None else option.maximum
    if name == "window":  # a (start, end) pair: exactly two times
        for option in [prop, *(prop.one_of or [])]:
            if isinstance(option, Schema) and option.type == OpenAPIType.ARRAY:
                option.min_items = option.max_items = 2
