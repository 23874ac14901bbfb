"""Golden payloads: every stored tag keeps decoding, and re-encodes to the very same bytes."""

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest

from apexmem.events import codec
from apexmem.events.catalogue import EVENT_CLASSES, tag_of
from apexmem.events.codec import decode, encode, register_upcaster
from apexmem.events.errors import IntegrityViolation
from apexmem.events.fact import FactArchived

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "events"
GOLDEN_FILES = sorted(GOLDEN.glob("*.json"))
CURRENT_FILES = [path for path in GOLDEN_FILES if path.stem in EVENT_CLASSES]

Upcaster = Callable[[bytes], tuple[str, bytes]]

OLD_RECORD = (
    b'{"recorded_at":"2024-01-02T03:04:05Z","actor":"agent:importer",'
    b'"data":{"type":"fact-forgotten.v0",'
    b'"fact_id":"651bf9c5-20de-58a1-82be-d9c078723a96","why":"superseded by a later import"}}'
)


@pytest.fixture
def upcasters() -> Iterator[dict[str, Upcaster]]:
    saved = dict(codec._upcasters)
    yield codec._upcasters
    codec._upcasters.clear()
    codec._upcasters.update(saved)


def _forgotten_to_archived(state: bytes) -> tuple[str, bytes]:
    # A made-up retired event: fact-forgotten.v0 {fact_id, why} became fact-archived.v1.
    record = msgspec.json.decode(state)
    old = record["data"]
    record["data"] = {"type": "fact-archived.v1", "fact_id": old["fact_id"], "reason": old["why"]}
    return "fact-archived.v1", msgspec.json.encode(record)


def test_every_tag_in_the_catalogue_has_a_golden_payload() -> None:
    stems = {path.stem for path in GOLDEN_FILES}

    missing = sorted(set(EVENT_CLASSES) - stems)

    assert not missing, (
        f"no golden payload for {missing}: add tests/golden/events/<tag>.json "
        "(see tests/golden/README.md)"
    )


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda path: path.stem)
def test_every_golden_payload_decodes_by_its_tag(path: Path) -> None:
    state = path.read_bytes()

    stored = decode(path.stem, state)

    assert stored.recorded_at.tzinfo is not None
    if path.stem in EVENT_CLASSES:
        assert tag_of(stored.data) == path.stem


@pytest.mark.parametrize("path", CURRENT_FILES, ids=lambda path: path.stem)
def test_re_encoding_a_golden_payload_gives_the_same_bytes(path: Path) -> None:
    state = path.read_bytes()

    again = encode(decode(path.stem, state))

    assert again == state, (
        f"{path.name} no longer round-trips: a released event class (or the envelope) was "
        "edited. Add a field with a default, or a .v2 class with an upcaster, instead."
    )


def test_a_retired_tag_decodes_through_its_upcaster(upcasters: dict[str, Upcaster]) -> None:
    seen: list[bytes] = []

    def upcaster(state: bytes) -> tuple[str, bytes]:
        seen.append(state)
        return _forgotten_to_archived(state)

    register_upcaster("fact-forgotten.v0", upcaster)

    stored = decode("fact-forgotten.v0", OLD_RECORD)

    assert seen == [OLD_RECORD]
    assert isinstance(stored.data, FactArchived)
    assert stored.data.reason == "superseded by a later import"
    assert stored.actor == "agent:importer"
    assert upcasters["fact-forgotten.v0"] is upcaster


def test_upcasters_chain_until_a_tag_has_a_class(upcasters: dict[str, Upcaster]) -> None:
    register_upcaster("fact-forgotten.v-1", lambda state: ("fact-forgotten.v0", state))
    register_upcaster("fact-forgotten.v0", _forgotten_to_archived)

    stored = decode("fact-forgotten.v-1", OLD_RECORD)

    assert isinstance(stored.data, FactArchived)
    assert len(upcasters) >= 2


def test_registering_an_upcaster_for_a_tag_that_has_a_class_is_refused(
    upcasters: dict[str, Upcaster],
) -> None:
    before = dict(upcasters)

    with pytest.raises(ValueError, match="still has a class"):
        register_upcaster("fact-archived.v1", _forgotten_to_archived)

    assert upcasters == before


def test_a_tag_with_neither_class_nor_upcaster_is_an_integrity_violation() -> None:
    with pytest.raises(IntegrityViolation, match=re.escape("fact-forgotten.v0")):
        decode("fact-forgotten.v0", OLD_RECORD)
