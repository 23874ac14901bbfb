"""The vectors projection reads only the events whose tags can carry a text."""

from pathlib import Path
from uuid import uuid4

import pytest

from apexmem.events.catalogue import EVENT_CLASSES
from apexmem.events.codec import decode
from apexmem.events.envelope import RecordedEvent
from apexmem.projections.vectors import TEXT_TAGS, text_of

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
