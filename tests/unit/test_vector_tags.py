"""The vectors projection reads only the events whose tags can carry a text."""

from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

import pytest

from apexmem.events.catalogue import EVENT_CLASSES
from apexmem.events.codec import decode
from apexmem.events.envelope import RecordedEvent
from apexmem.events.fact import FactReinforced
from apexmem.projections.vectors import TEXT_TAGS, VectorText, text_of

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "events"
CURRENT = sorted(p for p in GOLDEN.glob("*.json") if p.stem in EVENT_CLASSES)


@pytest.mark.parametrize("path", CURRENT, ids=lambda path: path.stem)
@pytest.mark.parametrize("version", [1, 2])
def test_an_event_with_a_text_has_one_of_the_text_tags(path: Path, version: int) -> None:
    # Every tag of the catalogue, as first and as later event of its stream: an event
    # that gives an item a text must be among the tags a vectors catch-up reads.
    stored = decode(path.stem, path.read_bytes())
    event = RecordedEvent(
        position=1,
        stream_id=uuid4(),
        version=version,
        tag=path.stem,
        recorded_at=stored.recorded_at,
        actor=stored.actor,
        episode=None,
        cause=None,
        data=stored.data,
    )
    assert (text_of(event) is not None) <= (path.stem in TEXT_TAGS)


def test_every_text_tag_is_a_tag_of_the_catalogue() -> None:
    assert set(TEXT_TAGS) <= set(EVENT_CLASSES)


@pytest.mark.parametrize("told", [None, "Alice works at Acme as a manager"])
def test_a_reinforcement_gives_its_fact_a_text_only_when_told_in_other_words(
    told: str | None,
) -> None:
    fact_id = uuid4()
    data = FactReinforced(
        fact_id=fact_id, confidence=0.9, observed_at=datetime(2024, 1, 1, tzinfo=UTC), fact=told
    )
    event = RecordedEvent(
        position=2,
        stream_id=uuid4(),
        version=2,
        tag="fact-reinforced.v1",
        recorded_at=datetime(2024, 1, 2, tzinfo=UTC),
        actor=None,
        episode=None,
        cause=None,
        data=data,
    )

    expected = None if told is None else VectorText("fact", fact_id, told)
    assert text_of(event) == expected
