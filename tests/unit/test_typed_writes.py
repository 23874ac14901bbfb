"""Memory's write methods take typed keywords, one per field of their command, with the
command's own defaults (a default left out of the fields must mean the same thing)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from apexmem import (
    AddAlias,
    AssertFact,
    MapRelation,
    Memory,
    MergeEntities,
    ObserveEntity,
    RecordMessage,
    ValidationError,
)
from apexmem.service.arguments import REQUIRED

PAIRS: list[tuple[Callable[..., Any], type[msgspec.Struct]]] = [
    (Memory.assert_fact, AssertFact),
    (Memory.observe_entity, ObserveEntity),
    (Memory.add_alias, AddAlias),
    (Memory.record_message, RecordMessage),
    (Memory.merge, MergeEntities),
    (Memory.map_relation, MapRelation),
]


def _keywords(method: Callable[..., Any]) -> dict[str, Any]:
    return {
        name: p.default
        for name, p in inspect.signature(method).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and name != "idempotency_key"
    }


@pytest.mark.parametrize(("method", "command"), PAIRS, ids=lambda x: getattr(x, "__name__", ""))
def test_each_field_of_the_command_is_a_keyword_with_the_commands_default(
    method: Callable[..., Any], command: type[msgspec.Struct]
) -> None:
    keywords = _keywords(method)
    fields = {f.name: f for f in msgspec.structs.fields(command)}

    assert set(keywords) == set(fields)
    for name, field in fields.items():
        default = keywords[name]
        if field.required:
            assert default is REQUIRED, name
        else:
            expected = field.default if field.default is not msgspec.NODEFAULT else []
            assert (list(default) if isinstance(default, tuple) else default) == expected, name


def test_a_missing_required_keyword_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "mem") as memory:
        with pytest.raises(ValidationError) as caught:
            memory.assert_fact(subject="Alice", object="Acme")

        assert caught.value.field == "relation"
        assert memory.log.last_position() == 0


def test_an_explicit_none_for_a_typed_name_is_refused_as_before(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "mem") as memory:
        with pytest.raises(ValidationError) as caught:
            memory.assert_fact(subject="Alice", relation="uses", object="Rust", object_type=None)  # type: ignore[arg-type]

        assert caught.value.field == "object_type"
