"""Every field and parameter of the OpenAPI document described, and limited to its fixed
values where it has them, from the same table as the MCP tools (`apexmem.wire_fields`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from litestar import Litestar
from litestar.openapi.spec import OpenAPI, Operation, Parameter, Reference, Schema
from litestar.openapi.spec.enums import OpenAPIType

from apexmem.wire_fields import (
    BOUNDS,
    ENUMS,
    EXCLUSIVE,
    FIELDS,
    NAMED,
    PATTERNS,
    VISIBLE,
    exclusive,
)

__all__ = ["describe_fields"]

_QUERIES: Final = {"factGraph": "FactGraphIn"}
"""The wire type a read's query parameters are converted into, where it has `PATTERNS`."""


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
            if isinstance(prop, Schema):
                _field(name, prop, body=True)
    for item in (document.paths or {}).values():
        for operation in (item.get, item.post, item.put, item.patch, item.delete):
            if isinstance(operation, Operation):
                parameters = [p for p in operation.parameters or [] if isinstance(p, Parameter)]
                for parameter in parameters:
                    _parameter(parameter)
                kind = _QUERIES.get(operation.operation_id or "", "")
                _patterns(PATTERNS.get(kind, {}), {p.name: p.schema for p in parameters})


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


def _field(name: str, prop: Schema, *, body: bool) -> None:
    """Describe a field; in a request body, a name must show a visible character (the
    lookups' query parameters take any text)."""
    if prop.description is None and name in FIELDS:
        prop.description = FIELDS[name]
    if body and name in NAMED and prop.pattern is None:
        prop.pattern = VISIBLE
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
