"""Every field and parameter of the OpenAPI document described, and limited to its fixed
values where it has them, from the same table as the MCP tools (`apexmem.wire_fields`)."""

from __future__ import annotations

from litestar import Litestar
from litestar.openapi.spec import OpenAPI, Operation, Parameter, Reference, Schema
from litestar.openapi.spec.enums import OpenAPIType

from apexmem.wire_fields import BOUNDS, ENUMS, FIELDS, NAMED, VISIBLE

__all__ = ["describe_fields"]


def describe_fields(api: Litestar) -> None:
    """Fill in the descriptions and enums of `api`'s OpenAPI document (built once, here)."""
    document: OpenAPI = api.openapi_schema
    schemas = document.components.schemas if document.components else None
    for kind, schema in (schemas or {}).items():
        if kind.endswith("In"):  # request types refuse unknown fields (forbid_unknown_fields)
            schema.additional_properties = False
        for name, prop in (schema.properties or {}).items():
            if isinstance(prop, Schema):
                _field(name, prop, body=True)
    for item in (document.paths or {}).values():
        for operation in (item.get, item.post, item.put, item.patch, item.delete):
            if isinstance(operation, Operation):
                for parameter in operation.parameters or []:
                    if isinstance(parameter, Parameter):
                        _parameter(parameter)


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
        if prop.type == OpenAPIType.INTEGER:  # a nullable one is left as the handler reads it
            prop.minimum = low if prop.minimum is None else prop.minimum
            prop.maximum = high if prop.maximum is None else prop.maximum
    if name == "window":  # a (start, end) pair: exactly two times
        for option in [prop, *(prop.one_of or [])]:
            if isinstance(option, Schema) and option.type == OpenAPIType.ARRAY:
                option.min_items = option.max_items = 2
