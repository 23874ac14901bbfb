"""A lone surrogate ("\\ud800") in any text field of any command is refused as a
ValidationError naming the field, the value and the rule, whichever way the command comes
in (a write method, `execute`, a batch), and nothing is written: UTF-8 cannot store it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final
from uuid import uuid4

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
    RetractFact,
    SetDecayRate,
    ValidationError,
)

BAD: Final = "Acme \ud800 Corp"

GOOD: Final[dict[type[msgspec.Struct], dict[str, Any]]] = {
    AssertFact: {"subject": "Alice Smith", "relation": "works_at", "object": "Acme Corp"},
    ObserveEntity: {"name": "Alice Smith"},
    AddAlias: {"entity": "Alice Smith", "alias": "Ally Smith"},
    RetractFact: {"fact_id": uuid4()},
    RecordMessage: {"episode": "chat-1", "speaker": "user", "text": "hello"},
    MergeEntities: {"source": "Alice Smith", "target": "Alice S."},
    SetDecayRate: {"edge_type": "episodic", "rate": 0.5},
    MapRelation: {"canonical": "works_at", "aliases": ["employed_by"]},
}
"""Fields that make a valid command of each kind."""


def _text_fields(kind: type[msgspec.Struct]) -> list[str]:
    """Every field of `kind` that holds text or a list of texts (found, not listed, so a new
    field is covered too)."""
    info = msgspec.inspect.type_info(kind)
    assert isinstance(info, msgspec.inspect.StructType)

    def holds_text(t: msgspec.inspect.Type) -> bool:
        if isinstance(t, msgspec.inspect.UnionType):
            return any(holds_text(u) for u in t.types)
        if isinstance(t, msgspec.inspect.ListType):
            return holds_text(t.item_type)
        return isinstance(t, msgspec.inspect.StrType)

    return [f.name for f in info.fields if holds_text(f.type)]


CASES: Final = [
    pytest.param(kind, name, id=f"{kind.__name__}.{name}")
    for kind in GOOD
    for name in _text_fields(kind)
]


def _poisoned(kind: type[msgspec.Struct], name: str) -> tuple[dict[str, Any], str]:
    """Valid fields of `kind` but `name` holding a lone surrogate, and the field the error
    should name."""
    fields = dict(GOOD[kind])
    if name == "value":
        del fields["object"]  # value and object cannot be given together
    if name == "aliases":
        fields[name] = ["employed_by", BAD]
        return fields, "aliases[1]"
    fields[name] = BAD
    return fields, name


def _write(memory: Memory, kind: type[msgspec.Struct], fields: dict[str, Any]) -> None:
    """Write `fields` with the command's own write method of the facade."""
    rest = dict(fields)
    if kind is RetractFact:
        memory.retract(rest.pop("fact_id"), **rest)
    elif kind is SetDecayRate:
        memory.set_decay_rate(rest.pop("edge_type"), rest.pop("rate"), **rest)
    else:
        methods: dict[type[msgspec.Struct], Callable[..., object]] = {
            AssertFact: memory.assert_fact,
            ObserveEntity: memory.observe_entity,
            AddAlias: memory.add_alias,
            RecordMessage: memory.record_message,
            MergeEntities: memory.merge,
            MapRelation: memory.map_relation,
        }
        methods[kind](**rest)


def _assert_refused(error: ValidationError, field: str) -> None:
    assert error.field == field
    assert error.value == BAD
    assert error.rule == "is not valid text: a lone surrogate at 5 (not UTF-8)"


def test_every_command_kind_is_covered() -> None:
    assert set(GOOD) == {
        AddAlias,
        AssertFact,
        MapRelation,
        MergeEntities,
        ObserveEntity,
        RecordMessage,
        RetractFact,
        SetDecayRate,
    }


@pytest.mark.parametrize(("kind", "name"), CASES)
def test_a_lone_surrogate_in_a_write_methods_field_is_refused_by_name_and_nothing_is_written(
    memory: Memory, kind: type[msgspec.Struct], name: str
) -> None:
    if name == "episode" and kind in (RetractFact, SetDecayRate):
        pytest.skip("retract and set_decay_rate take no episode: execute covers it")
    fields, field = _poisoned(kind, name)

    with pytest.raises(ValidationError) as refused:
        _write(memory, kind, fields)

    _assert_refused(refused.value, field)
    assert memory.stats().events == 0


@pytest.mark.parametrize(("kind", "name"), CASES)
def test_a_lone_surrogate_in_a_commands_field_is_refused_by_execute_alone_and_in_a_batch(
    memory: Memory, kind: type[msgspec.Struct], name: str
) -> None:
    fields, field = _poisoned(kind, name)
    good = ObserveEntity(name="Bob Jones")
    command: Any = kind(**fields)

    with pytest.raises(ValidationError) as alone:
        memory.execute([command])
    with pytest.raises(ValidationError) as batched:
        memory.execute([good, command])

    _assert_refused(alone.value, field)
    _assert_refused(batched.value, f"[1].{field}")
    assert memory.stats().events == 0


@pytest.mark.parametrize("name", _text_fields(AssertFact))
def test_a_lone_surrogate_in_a_batch_of_facts_is_named_by_its_index(
    memory: Memory, name: str
) -> None:
    fields, field = _poisoned(AssertFact, name)
    good = dict(GOOD[AssertFact])

    with pytest.raises(ValidationError) as as_mappings:
        memory.assert_facts([good, good, fields])
    with pytest.raises(ValidationError) as as_commands:
        memory.assert_facts([AssertFact(**good), AssertFact(**fields)])

    _assert_refused(as_mappings.value, f"facts[2].{field}")
    _assert_refused(as_commands.value, f"facts[1].{field}")
    assert memory.stats().events == 0


def test_text_outside_ascii_that_utf8_can_encode_is_written(memory: Memory) -> None:
    memory.assert_fact(subject="Zoë Ångström", relation="works_at", object="Café 🍵 Ltd")

    assert memory.stats().events > 0
