"""Request bodies decoded strictly by msgspec into `apexmem.wire` types, in apexmem's words.

Litestar's own decoding coerces ("0.5" for a number) and reports errors in its own shape;
this DTO hands the raw body to `apexmem.wire.decode`, whose ValidationError names the
field, the value and the rule, and documents the body with the wire type's schema.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

from litestar.dto import AbstractDTO, DTOConfig, DTOFieldDefinition
from litestar.openapi.spec import Reference, Schema
from litestar.typing import FieldDefinition

from apexmem.wire import decode

__all__ = ["StrictBody"]

T = TypeVar("T")


class StrictBody(AbstractDTO[T]):
    """`dto=StrictBody[SomeWireType]` on a handler: its `data` is decoded by msgspec, strictly."""

    config = DTOConfig()

    @classmethod
    def generate_field_definitions(
        cls, model_type: type[Any]
    ) -> Generator[DTOFieldDefinition, None, None]:
        """None: the wire type is decoded whole, never field by field."""
        yield from ()

    @classmethod
    def detect_nested_field(cls, field_definition: FieldDefinition) -> bool:
        """Never: see generate_field_definitions."""
        return False

    @classmethod
    def create_for_field_definition(
        cls, field_definition: FieldDefinition, handler_id: str, backend_cls: Any = None
    ) -> None:
        """Nothing to prepare: decoding needs only the model type."""

    @classmethod
    def create_openapi_schema(
        cls, field_definition: FieldDefinition, handler_id: str, schema_creator: Any
    ) -> Reference | Schema:
        """The wire type's own schema."""
        schema: Reference | Schema = schema_creator.for_field_definition(
            FieldDefinition.from_annotation(cls.model_type)
        )
        return schema

    def decode_bytes(self, value: bytes) -> Any:
        """The body as the wire type, or ValidationError."""
        return decode(self.model_type, value)
