"""A batch of commands decides its first try before the log's write lock: what another
writer appends between that decision and the lock is found under the lock, and the batch is
decided again (under the lock) when it touched anything the batch read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from apexmem import Memory, parse_settings
from apexmem.events.errors import ConcurrencyError
from apexmem.events.ports import LockedLog, LogReads
from apexmem.service.pipeline import Append
from apexmem.service.writer import Batch

LOG_FIRST, _ = parse_settings("[memory.projection]\ninline = true\n")


@contextmanager
def between_decision_and_lock(
    monkeypatch: pytest.MonkeyPatch, meanwhile: Callable[[], Any]
) -> Iterator[list[str]]:
    """Run `meanwhile` once, after the next batch decided ahead of the lock (its first
    decision); yields the outcomes of each check under the lock ("held" or "conflicted")."""
    outcomes: list[str] = []
    first: list[Batch] = []
    decide, check = Batch.decide, Batch.still_holds

    def deciding(self: Batch, log: LogReads) -> Append:
        wanted = decide(self, log)
        if not first:
            first.append(self)
            meanwhile()
        return wanted

    def checking(self: Batch, log: LockedLog) -> None:
        if self is not first[0]:  # the writes made meanwhile are checked too
            check(self, log)
            return
        try:
            check(self, log)
        except ConcurrencyError:
            outcomes.append("conflicted")
            raise
        outcomes.append("held")

    monkeypatch.setattr(Batch, "decide", deciding)
    monkeypatch.setattr(Batch, "still_holds", checking)
    yield outcomes


def test_a_merge_between_decision_and_lock_makes_the_batch_decide_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        Memory.open(tmp_path / "mem", settings=LOG_FIRST) as mine,
        Memory.open(tmp_path / "mem", settings=LOG_FIRST) as other,
    ):
        mine.observe_entity(name="Alice Stone", entity_type="person")
        other.observe_entity(name="Alicia Stone", entity_type="person")

        def merge() -> None:
            other.merge(source="Alice Stone", target="Alicia Stone", entity_type="person")

        with between_decision_and_lock(monkeypatch, merge) as outcomes:
            made = mine.assert_fact(
                subject="Alice Stone",
                subject_type="person",
                relation="works_at",
                object="Acme",
                object_type="organization",
            )

        assert outcomes == ["conflicted"]  # the retry decides under the lock: no check
        about = {f.fact_id: f.subject for f in mine.facts_about("Alicia Stone")}
        assert about.get(made.fact_id) == "Alicia Stone"
        assert mine.verify().ok


def test_an_append_to_streams_the_batch_never_read_lets_the_decision_stand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        Memory.open(tmp_path / "mem", settings=LOG_FIRST) as mine,
        Memory.open(tmp_path / "mem", settings=LOG_FIRST) as other,
    ):
        mine.observe_entity(name="Alice Stone", entity_type="person")

        def unrelated() -> None:
            other.assert_fact(subject="Bob Ray", relation="uses", object="Rust")

        with between_decision_and_lock(monkeypatch, unrelated) as outcomes:
            made = mine.assert_fact(subject="Alice Stone", relation="uses", object="Go")

        assert outcomes == ["held"]
        [alice] = mine.facts_about("Alice Stone")
        [bob] = mine.facts_about("Bob Ray")
        assert (alice.fact_id, alice.object) == (made.fact_id, "Go")
        assert bob.position < alice.position  # appended after the other writer's fact
        # The writer's cache is not taken as true past what it decided from: a fact about
        # Bob from it now reads the slot the other writer began.
        again = mine.assert_fact(subject="Bob Ray", relation="uses", object="Rust")
        assert [f.fact_id for f in mine.facts_about("Bob Ray")] == [bob.fact_id]
        assert again.fact_id == bob.fact_id
        assert mine.verify().ok


def test_the_same_idempotency_key_used_meanwhile_returns_the_first_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        Memory.open(tmp_path / "mem", settings=LOG_FIRST) as mine,
        Memory.open(tmp_path / "mem", settings=LOG_FIRST) as other,
    ):
        facts = [{"subject": "Alice Stone", "relation": "uses", "object": "Go"}]

        def same_key() -> None:
            other.assert_facts(facts, idempotency_key="k-1")

        with between_decision_and_lock(monkeypatch, same_key) as outcomes:
            mine.assert_facts(facts, idempotency_key="k-1")

        assert outcomes == ["conflicted"]
        assert len(mine.facts_about("Alice Stone")) == 1
        assert sum(1 for _ in mine.log.read()) == sum(1 for _ in other.log.read())
