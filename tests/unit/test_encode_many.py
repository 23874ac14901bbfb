"""encode_many gives the very bytes `encode` gives each record (the hash chain covers them)."""

from datetime import UTC, datetime
from pathlib import Path

import msgspec

from apexmem.events.catalogue import EVENT_CLASSES
from apexmem.events.codec import Stored, decode, encode, encode_many

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "events"
CURRENT = [path for path in sorted(GOLDEN.glob("*.json")) if path.stem in EVENT_CLASSES]
ENVELOPES = [
    (None, None, None),
    ("agent:ä", "conv\n1", None),
    (None, "line\rbreak", "key\u2028x"),
    ("a" * 300, None, "k"),
]


def test_every_golden_payload_encodes_in_a_batch_as_it_does_alone() -> None:
    at = datetime(2025, 6, 7, 8, 9, 10, 123456, tzinfo=UTC)
    payloads = [decode(path.stem, path.read_bytes()).data for path in CURRENT]
    envelopes = [ENVELOPES[i % len(ENVELOPES)] for i in range(len(payloads))]

    batch = encode_many(at, envelopes, payloads)

    alone = [
        encode(Stored(recorded_at=at, actor=a, episode=e, cause=c, data=p))
        for (a, e, c), p in zip(envelopes, payloads, strict=True)
    ]
    assert len(payloads) == len(CURRENT) > 10
    assert batch == alone


def test_an_empty_batch_encodes_to_nothing() -> None:
    assert encode_many(datetime(2025, 1, 1, tzinfo=UTC), [], []) == []


def test_a_payload_with_line_breaks_stays_one_record() -> None:
    payload = msgspec.json.decode((GOLDEN / "message-recorded.v1.json").read_bytes())["data"]
    payload["text"] = "one\ntwo\r\nthree\u2029four"
    stored = decode("message-recorded.v1", msgspec.json.encode({**_envelope(), "data": payload}))
    at = stored.recorded_at

    [record] = encode_many(at, [(None, None, None)], [stored.data])

    assert record == encode(Stored(recorded_at=at, data=stored.data))


def _envelope() -> dict[str, str]:
    return {"recorded_at": "2024-01-02T03:04:05Z"}
