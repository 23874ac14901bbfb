"""The write path's shortcuts give exactly what the straightforward code gives.

Derived ids come from a hand-rolled uuid5, the chain hashes one buffer, the log builds its
rows without eventsourcing's mapper objects, commands are validated in one msgspec call:
each is checked here against the definition it replaces.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid5

import pytest
from blake3 import blake3
from hypothesis import given
from hypothesis import strategies as st

from apexmem import ValidationError
from apexmem.domain.commands import AssertFact, SetDecayRate, build, build_many
from apexmem.domain.identities import (
    NS,
    alias_id,
    entity_id,
    episode_id,
    fact_id,
    message_id,
    object_key,
    slot_id,
)
from apexmem.events import EventLog, FactsRetrieved, NewEvent, Stored, tag_of
from apexmem.events.chain import GENESIS, link, links
from apexmem.events.codec import Pending, TaggedMapper
from apexmem.events.located import MAX_VERSION, locates, location, uuid_of_int
from apexmem.events.storedids import BINARY, StoredIds

NAMES = st.text(min_size=1, max_size=80)
IDS = st.uuids()


@given(kind=NAMES, name=NAMES)
def test_entity_and_alias_ids_are_the_standard_uuid5(kind: str, name: str) -> None:
    assert entity_id(kind, name) == uuid5(NS, f"entity/{kind}/{name}")
    assert alias_id(kind, name) == uuid5(NS, f"alias/{kind}/{name}")
    assert str(entity_id(kind, name)) == str(uuid5(NS, f"entity/{kind}/{name}"))
    assert entity_id(kind, name).version == 5


@given(subject=IDS, relation=NAMES, edge=NAMES, key=st.none() | NAMES)
def test_slot_ids_are_the_standard_uuid5_asked_once_or_twice(
    subject: UUID, relation: str, edge: str, key: str | None
) -> None:
    base = f"slot/{subject}/{relation}/{edge}"
    expected = uuid5(NS, base if key is None else f"{base}/{key}")

    assert slot_id(subject, relation, edge, key) == expected
    assert slot_id(subject, relation, edge, key) == expected


@given(stream=IDS, version=st.integers(min_value=1, max_value=MAX_VERSION), name=NAMES)
def test_fact_and_message_ids_are_located_and_episode_ids_the_standard_uuid5(
    stream: UUID, version: int, name: str
) -> None:
    located = UUID(bytes=stream.bytes[:12] + version.to_bytes(4, "big"))
    low, high, found = location(fact_id(stream, version))

    assert fact_id(stream, version) == message_id(stream, version) == located
    assert hash(fact_id(stream, version)) == hash(located)
    assert str(fact_id(stream, version)) == str(located)
    assert low <= stream <= high and found == version
    assert locates(located, stream, version)
    assert not locates(located, stream, version + 1)
    assert episode_id(name) == uuid5(NS, f"episode/{name}")


@given(stream=IDS, version=st.sampled_from([0, -1, MAX_VERSION + 1, 2**40]))
def test_a_version_no_located_id_can_hold_is_refused_with_the_rule(
    stream: UUID, version: int
) -> None:
    with pytest.raises(ValidationError, match=rf"version: {version} is outside 1\.\.{MAX_VERSION}"):
        fact_id(stream, version)
    wrapped = UUID(int=(stream.int >> 32 << 32) | (version & MAX_VERSION))
    assert not locates(wrapped, stream, version)


@given(ids=st.lists(IDS, max_size=5))
def test_a_uuid_made_from_its_int_and_its_stored_bytes_are_the_standard_ones(
    ids: list[UUID],
) -> None:
    made = [uuid_of_int(u.int) for u in ids]

    assert made == ids
    assert [(str(m), hash(m), m.is_safe, m.version) for m in made] == [
        (str(u), hash(u), u.is_safe, u.version) for u in ids
    ]
    assert StoredIds(BINARY).streams(ids) == [u.bytes for u in ids]


@given(entity=IDS)
def test_an_entity_object_key_is_the_same_string_every_time(entity: UUID) -> None:
    assert object_key(entity, None) == f"entity:{entity}"
    assert object_key(entity, "ignored") == f"entity:{entity}"


@given(
    previous=st.binary(min_size=32, max_size=32),
    stream=IDS,
    version=st.integers(min_value=1, max_value=2**62),
    tag=st.text(max_size=40),
    state=st.binary(max_size=2_000),
)
def test_a_chain_link_hashes_the_parts_in_the_documented_order(
    previous: bytes, stream: UUID, version: int, tag: str, state: bytes
) -> None:
    tag_bytes = tag.encode()
    hasher = blake3(previous)
    for part in (
        stream.bytes,
        version.to_bytes(8, "big", signed=True),
        len(tag_bytes).to_bytes(4, "big"),
        tag_bytes,
        len(state).to_bytes(8, "big"),
        state,
    ):
        hasher.update(part)

    assert link(previous, stream.bytes, version, tag, state) == hasher.digest()


@given(
    actor=st.none() | st.text(max_size=20),
    episode=st.none() | st.text(max_size=20),
    cause=st.none() | st.text(max_size=20),
)
def test_the_log_stores_what_the_mapper_would(
    tmp_path_factory: pytest.TempPathFactory,
    actor: str | None,
    episode: str | None,
    cause: str | None,
) -> None:
    when = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    log = EventLog(tmp_path_factory.mktemp("log") / "events.db", clock=lambda: when)
    event = NewEvent(
        stream_id=NS,
        version=1,
        data=FactsRetrieved(fact_ids=[NS]),
        actor=actor,
        episode=episode,
        cause=cause,
    )
    mapped = TaggedMapper().to_stored_event(
        Pending(
            originator_id=NS,
            originator_version=1,
            stored=Stored(
                recorded_at=when, actor=actor, episode=episode, cause=cause, data=event.data
            ),
        )
    )

    [position] = log.append([event]).positions
    [raw] = list(log.raw_records())
    log.close()

    assert (raw.stream_id, raw.version, raw.tag, raw.state) == (
        NS.hex,
        mapped.originator_version,
        mapped.topic,
        mapped.state,
    )
    assert raw.chain == link(GENESIS, NS.bytes, 1, tag_of(event.data), mapped.state)
    assert position == 1


FIELD_VALUES = st.fixed_dictionaries(
    {"subject": st.text(max_size=10), "relation": st.text(max_size=10)},
    optional={
        "object": st.none() | st.text(max_size=10),
        "value": st.none() | st.text(max_size=10),
        "confidence": st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=3),
        "fact": st.none() | st.text(max_size=3000),
        "valid_from": st.datetimes(timezones=st.none() | st.just(UTC)),
        "valid_until": st.datetimes(timezones=st.just(UTC)),
        "colour": st.integers(),
    },
)


@given(batch=st.lists(FIELD_VALUES, max_size=6))
def test_a_batch_is_validated_as_each_command_alone_would_be(batch: list[dict[str, Any]]) -> None:
    expected: list[AssertFact] | ValidationError
    try:
        expected = [build(AssertFact, fields) for fields in batch]
    except ValidationError:
        expected = first_error(batch)

    try:
        got: list[AssertFact] | ValidationError = build_many(AssertFact, batch)
    except ValidationError as e:
        got = e

    if isinstance(expected, ValidationError):
        assert isinstance(got, ValidationError)
        assert (got.field, repr(got.value), got.rule) == (
            expected.field,
            repr(expected.value),
            expected.rule,
        )
    else:
        assert got == expected


def first_error(batch: list[dict[str, Any]]) -> ValidationError:
    """The error `build` raises for the first bad command, its field prefixed `[index].`."""
    for i, fields in enumerate(batch):
        try:
            build(AssertFact, fields)
        except ValidationError as e:
            return ValidationError(f"[{i}].{e.field}", e.value, e.rule)
    raise AssertionError("no command is bad")


def test_a_non_finite_rate_in_a_batch_is_refused_as_build_refuses_it() -> None:
    batch = [{"edge_type": "semantic", "rate": 0.1}, {"edge_type": "causal", "rate": math.nan}]

    with pytest.raises(ValidationError) as caught:
        build_many(SetDecayRate, batch)

    assert caught.value.field == "[1].rate"
    assert caught.value.rule == "is not a finite number"


@given(
    previous=st.binary(min_size=32, max_size=32),
    records=st.lists(
        st.tuples(
            st.uuids(),
            st.integers(min_value=1, max_value=2**40),
            st.sampled_from(["fact-asserted.v1", "entity-observed.v1", "x"]),
            st.binary(max_size=500),
        ),
        max_size=20,
    ),
)
def test_links_of_many_records_equal_one_link_after_another(
    previous: bytes, records: list[tuple[UUID, int, str, bytes]]
) -> None:
    expected = []
    chain = previous
    for stream, version, tag, state in records:
        chain = link(chain, stream.bytes, version, tag, state)
        expected.append(chain)

    got = links(previous, [(s.bytes, v, t, b) for s, v, t, b in records])

    assert got == expected
