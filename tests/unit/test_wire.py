"""The servers' wire types: they mirror the commands, decode strictly, and key retries."""

from __future__ import annotations

import msgspec
import pytest

from apexmem.calls import idempotency_key
from apexmem.domain.commands import AddAlias, AssertFact, RecordMessage, RetractFact
from apexmem.events.errors import ValidationError
from apexmem.wire import AliasIn, FactIn, FactsIn, MessageIn, RetractIn, convert, decode


def _fields(kind: type[msgspec.Struct]) -> dict[str, object]:
    return {f.name: f.default for f in msgspec.structs.fields(kind)}


@pytest.mark.parametrize(
    ("wire", "command"),
    [
        (FactIn, AssertFact),
        (MessageIn, RecordMessage),
        (AliasIn, AddAlias),
        (RetractIn, RetractFact),
    ],
)
def test_each_write_request_has_the_fields_and_defaults_of_its_command(
    wire: type[msgspec.Struct], command: type[msgspec.Struct]
) -> None:
    ours, theirs = _fields(wire), _fields(command)

    assert set(ours) == set(theirs)
    assert {k: v for k, v in ours.items() if k != "episode"} == {
        k: v for k, v in theirs.items() if k != "episode"
    }


def test_decoding_names_the_field_the_value_and_the_rule() -> None:
    with pytest.raises(ValidationError) as caught:
        decode(FactsIn, b'{"facts": [{"subject": "Al", "relation": "r", "confidence": "high"}]}')

    assert caught.value.field == "facts[0].confidence"
    assert caught.value.value == "high"
    assert "expected `float`" in caught.value.rule


def test_converting_arguments_refuses_a_naive_time_and_says_how_to_fix_it() -> None:
    with pytest.raises(ValidationError) as caught:
        convert(FactIn, {"subject": "Alice", "relation": "r", "valid_from": "2024-01-01T00:00:00"})

    assert caught.value.field == "valid_from"
    assert "give a timezone" in caught.value.rule


def test_an_idempotency_key_is_bound_to_its_operation_and_request() -> None:
    one = FactsIn(facts=[FactIn(subject="Alice", relation="works_at", object="Acme")])
    reordered = b'{"facts": [{"relation": "works_at", "object": "Acme", "subject": "Alice"}]}'
    same = decode(FactsIn, reordered)
    other = FactsIn(facts=[FactIn(subject="Bob", relation="works_at", object="Acme")])

    key = idempotency_key("facts", "k1", one)

    assert key == idempotency_key("facts", "k1", same)
    assert key != idempotency_key("facts", "k1", other)
    assert key != idempotency_key("messages", "k1", one)
    assert idempotency_key("facts", None, one) is None


@pytest.mark.parametrize("bad", ["", "with space", "x" * 256, "tab\there", "é"])
def test_an_idempotency_key_must_be_visible_ascii(bad: str) -> None:
    request = FactsIn(facts=[FactIn(subject="Alice", relation="r")])

    with pytest.raises(ValidationError) as caught:
        idempotency_key("facts", bad, request)

    assert caught.value.field == "Idempotency-Key"
