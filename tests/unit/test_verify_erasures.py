"""verify over erasures, at the log's level: a blanked record stands only with a later
erasure event that committed to its chain hash and bytes, and an erasure event never
stands for a record that still holds its content."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from uuid import UUID, uuid4

from blake3 import blake3

from apexmem.events.entity import EntityObserved
from apexmem.events.envelope import NewEvent
from apexmem.events.erasure import RecordsErased
from apexmem.events.log import EventLog, LockedEventLog
from apexmem.replay.verify import verify


def _observed(name: str) -> NewEvent:
    entity = uuid4()
    data = EntityObserved(entity_id=entity, entity_type="person", canonical_name=name, name=name)
    return NewEvent(stream_id=entity, version=1, data=data)


def _erasure(positions: list[int], chains: list[bytes], blanks: list[bytes]) -> NewEvent:
    data = RecordsErased(
        scope="entity", target=UUID(int=1), reason="request", positions=positions,
        chains=[c.hex() for c in chains], blanks=[b.hex() for b in blanks],
    )  # fmt: skip
    return NewEvent(stream_id=uuid4(), version=1, data=data)


def _log(tmp_path: Path, clock: Callable[[], datetime]) -> EventLog:
    log = EventLog(tmp_path / "events.db", clock=clock)
    log.append([_observed("priya shah"), _observed("bob stone")])
    return log


def test_a_blanked_record_vouched_for_by_a_later_erasure_verifies(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    log = _log(tmp_path, clock)
    with log.locked() as locked:
        assert isinstance(locked, LockedEventLog)
        [(chain, kept)] = locked.blank([1]).values()
        locked.append([_erasure([1], [chain], [kept])])

    report = verify(log)
    log.close()

    assert report.ok and report.events_checked == 3


def test_an_erasure_that_lists_a_record_still_holding_its_content_fails_there(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    log = _log(tmp_path, clock)
    chain = log.chains([1])[1]
    log.append([_erasure([1], [chain], [blake3(b"").digest()])])

    report = verify(log)
    log.close()

    assert not report.ok and report.first_bad_position == 1
    assert report.reason is not None and "still holds its content" in report.reason


def test_a_blank_vouched_for_with_another_hash_fails_there(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    log = _log(tmp_path, clock)
    with log.locked() as locked:
        assert isinstance(locked, LockedEventLog)
        [(chain, _)] = locked.blank([2]).values()
        locked.append([_erasure([2], [chain], [blake3(b"other bytes").digest()])])

    report = verify(log)
    log.close()

    assert not report.ok and report.first_bad_position == 2
