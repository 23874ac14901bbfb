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
from hypothesis import given
from hypothesis import strategies as st

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


_PLAIN: dict[type[mi.Type], st.SearchStrategy[Any]] = {
    mi.UUIDType: st.uuids(),
    mi.BoolType: st.booleans(),
    mi.NoneType: st.none(),
    mi.DateTimeType: AWARE,
}


def for_type(info: mi.Type) -> st.SearchStrategy[Any]:
    """A strategy producing valid values of one msgspec field type."""
    strategy = _PLAIN.get(type(info))
    if isinstance(info, mi.DateTimeType):
        assert info.tz is not False, "events never hold naive datetimes"
    elif isinstance(info, mi.StrType):
        strategy = st.text(min_size=info.min_length or 0, max_size=min(info.max_length or 40, 40))
    elif isinstance(info, mi.FloatType):
        strategy = _floats(info)
    elif isinstance(info, mi.IntType):
        strategy = st.integers(min_value=info.ge, max_value=info.le)
    elif isinstance(info, mi.LiteralType):
        strategy = st.sampled_from(info.values)
    elif isinstance(info, mi.ListType):
        strategy = st.lists(for_type(info.item_type), max_size=4)
    elif isinstance(info, mi.UnionType):
        strategy = st.one_of([for_type(t) for t in info.types])
    elif isinstance(info, mi.StructType):  # a record inside an event (a decay pass's fades)
        fields = {f.name: for_type(f.type) for f in info.fields}
        strategy = st.builds(info.cls, **fields)
    if strategy is None:
        raise NotImplementedError(f"no strategy for msgspec type {info!r}; add one here")
    return strategy


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


ALL_STORED = st.tuples(*(stored_of(cls) for cls in EVENT_CLASSES.values()))
"""One envelope of every event class per example, so each class gets every example."""


@given(envelopes=ALL_STORED)
def test_every_event_round_trips_by_tag_to_an_equal_envelope_and_identical_bytes(
    envelopes: tuple[Stored[Any], ...],
) -> None:
    encoded = [(tag_of(s.data), encode(s)) for s in envelopes]

    decoded = [decode(tag, state) for tag, state in encoded]

    assert decoded == list(envelopes)
    assert [type(d.data) for d in decoded] == list(EVENT_CLASSES.values())
    assert [encode(d) for d in decoded] == [state for _, state in encoded]


@given(envelopes=ALL_STORED, version=st.integers(min_value=1, max_value=2**62))
def test_the_mapper_stores_the_tag_as_topic_and_maps_back_to_an_equal_event(
    envelopes: tuple[Stored[Any], ...], version: int
) -> None:
    pending = [
        Pending(originator_id=uuid4(), originator_version=version, stored=s) for s in envelopes
    ]
    mapper = TaggedMapper()

    records = [mapper.to_stored_event(p) for p in pending]
    back = [mapper.to_domain_event(r) for r in records]

    assert [r.topic for r in records] == list(EVENT_CLASSES)
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
