"""Every event class survives encode then decode by tag, inside its stored envelope.

The strategies are derived from each class's msgspec type info, so a class or field added
to the catalogue is covered without editing this file (an unknown field type fails loudly).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from uuid import uuid4

import msgspec
import msgspec.inspect as mi
import pytest
from apexmem.events import (
    EVENT_CLASSES,
    Event,
    FactReinforced,
    IntegrityViolation,
    Stored,
    decode,
    encode,
    tag_of,
)
from apexmem.events.codec import Pending, TaggedMapper
from hypothesis import given
from hypothesis import strategies as st

OFFSETS = st.sampled_from(
    [
        UTC,
        timezone(timedelta(hours=5, minutes=30)),
        timezone(timedelta(hours=-8)),
        timezone(timedelta(hours=14)),
        timezone(timedelta(hours=-12, minutes=-45)),
    ]
)
AWARE = st.datetimes(
    min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=OFFSETS
)
SHORT_TEXT = st.text(max_size=40)


def for_type(info: mi.Type) -> st.SearchStrategy[Any]:
    """A strategy producing valid values of one msgspec field type."""
    if isinstance(info, mi.UUIDType):
        return st.uuids()
    if isinstance(info, mi.StrType):
        return st.text(
            min_size=info.min_length or 0,
            max_size=min(info.max_length or 40, 40),
        )
    if isinstance(info, mi.FloatType):
        return _floats(info)
    if isinstance(info, mi.IntType):
        return st.integers(min_value=info.ge, max_value=info.le)
    if isinstance(info, mi.BoolType):
        return st.booleans()
    if isinstance(info, mi.DateTimeType):
        assert info.tz is not False, "events never hold naive datetimes"
        return AWARE
    if isinstance(info, mi.LiteralType):
        return st.sampled_from(info.values)
    if isinstance(info, mi.ListType):
        return st.lists(for_type(info.item_type), max_size=4)
    if isinstance(info, mi.UnionType):
        return st.one_of([for_type(t) for t in info.types])
    if isinstance(info, mi.NoneType):
        return st.none()
    raise NotImplementedError(f"no strategy for msgspec type {info!r}; add one here")


def _floats(info: mi.FloatType) -> st.SearchStrategy[float]:
    low = info.ge if info.ge is not None else info.gt
    high = info.le if info.le is not None else info.lt
    return st.floats(
        min_value=low,
        max_value=high,
        exclude_min=info.gt is not None,
        exclude_max=info.lt is not None,
        allow_nan=False,
        allow_infinity=False,
    )


def events_of(cls: type[Event]) -> st.SearchStrategy[Event]:
    """Instances of one event class; optional fields are sometimes left at their default."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    required = {f.name: for_type(f.type) for f in info.fields if f.required}
    optional = {f.name: for_type(f.type) for f in info.fields if not f.required}
    return st.fixed_dictionaries(required, optional=optional).map(lambda kw: cls(**kw))


def stored_of(cls: type[Event]) -> st.SearchStrategy[Stored[Any]]:
    """Envelopes holding an instance of one event class."""
    return st.builds(
        Stored,
        recorded_at=AWARE,
        actor=st.none() | SHORT_TEXT,
        episode=st.none() | SHORT_TEXT,
        cause=st.none() | SHORT_TEXT,
        data=events_of(cls),
    )


EVERY_CLASS = pytest.mark.parametrize("cls", list(EVENT_CLASSES.values()), ids=list(EVENT_CLASSES))


@EVERY_CLASS
@given(data=st.data())
def test_an_event_in_its_envelope_decodes_by_tag_to_an_equal_envelope(
    cls: type[Event], data: st.DataObject
) -> None:
    stored = data.draw(stored_of(cls))

    decoded = decode(tag_of(stored.data), encode(stored))

    assert decoded == stored
    assert type(decoded.data) is cls


@EVERY_CLASS
@given(data=st.data())
def test_re_encoding_a_decoded_event_gives_the_same_bytes(
    cls: type[Event], data: st.DataObject
) -> None:
    stored = data.draw(stored_of(cls))
    encoded = encode(stored)

    again = encode(decode(tag_of(stored.data), encoded))

    assert again == encoded


@EVERY_CLASS
@given(data=st.data())
def test_the_mapper_stores_the_tag_as_topic_and_maps_back_to_an_equal_event(
    cls: type[Event], data: st.DataObject
) -> None:
    stored = data.draw(stored_of(cls))
    pending = Pending(originator_id=uuid4(), originator_version=3, stored=stored)
    mapper = TaggedMapper()

    record = mapper.to_stored_event(pending)
    back = mapper.to_domain_event(record)

    assert record.topic == tag_of(stored.data) == cls.__struct_config__.tag
    assert back == pending


def test_every_tag_is_versioned_and_names_its_own_class() -> None:
    tags = list(EVENT_CLASSES.items())

    mismatched = [t for t, cls in tags if cls.__struct_config__.tag != t]
    unversioned = [t for t, _ in tags if not t.rpartition(".v")[2].isdigit()]

    assert mismatched == []
    assert unversioned == []


def test_a_stored_record_with_a_naive_time_does_not_decode() -> None:
    event = FactReinforced(fact_id=uuid4(), confidence=0.5, observed_at=datetime.now(UTC))
    state = encode(Stored(recorded_at=datetime(2024, 1, 1, tzinfo=UTC), data=event))
    naive = state.replace(b'"2024-01-01T00:00:00Z"', b'"2024-01-01T00:00:00"')

    with pytest.raises(IntegrityViolation) as caught:
        decode("fact-reinforced.v1", naive)

    assert "fact-reinforced.v1" in str(caught.value)


def test_a_stored_tag_without_a_class_or_upcaster_does_not_decode() -> None:
    state = msgspec.json.encode({"recorded_at": "2024-01-01T00:00:00Z", "data": {}})

    with pytest.raises(IntegrityViolation) as caught:
        decode("fact-imagined.v1", state)

    assert "fact-imagined.v1" in str(caught.value)
