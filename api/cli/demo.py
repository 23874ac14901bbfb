"""`apexmem demo`: a short scripted story an agent could live through, printed step by step."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from apexmem.memory import Memory
from apexmem.service.results import FactRef

__all__ = ["run_demo"]


def _at(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


_LEARNED: list[dict[str, Any]] = [
    {
        "subject": "Alice",
        "subject_type": "person",
        "relation": "works_at",
        "object": "Acme",
        "object_type": "organization",
        "fact": "Alice works at Acme",
        "confidence": 0.9,
        "valid_from": _at(2021, 3, 1),
    },
    {
        "subject": "Alice",
        "subject_type": "person",
        "relation": "uses",
        "object": "Rust",
        "object_type": "language",
        "fact": "Alice uses Rust",
        "confidence": 0.95,
        "valid_from": _at(2022, 1, 10),
    },
    {
        "subject": "Bob",
        "subject_type": "person",
        "relation": "knows",
        "object": "Alice",
        "object_type": "person",
        "fact": "Bob knows Alice",
        "confidence": 0.8,
        "valid_from": _at(2020, 5, 4),
    },
    {
        "subject": "Rust",
        "subject_type": "language",
        "relation": "uses",
        "object": "cargo",
        "object_type": "tool",
        "fact": "Rust uses cargo",
        "confidence": 0.95,
        "valid_from": _at(2015, 5, 15),
    },
    {
        "subject": "Bob",
        "subject_type": "person",
        "relation": "lives_in",
        "object": "Lisbon",
        "object_type": "location",
        "fact": "Bob lives in Lisbon",
        "confidence": 0.7,
        "valid_from": _at(2023, 9, 1),
    },
]


def run_demo(memory: Memory, say: Any) -> dict[str, Any]:
    """Play the story against `memory`; `say(kind, payload)` prints each step."""
    learned = memory.assert_facts([dict(f, episode="conv-1", actor="agent-7") for f in _LEARNED])
    say("step", f"1. agent-7 learned {len(learned)} facts in one atomic append (episode conv-1)")
    alias = memory.add_alias(
        entity="Rust", entity_type="language", alias="rust-lang", actor="agent-7"
    )
    say("step", f"   alias 'rust-lang' for Rust: {alias.outcome}")
    again = memory.assert_fact(
        subject="rust-lang",
        subject_type="language",
        relation="uses",
        object="cargo",
        object_type="tool",
        fact="Rust uses cargo",
        confidence=0.97,
        episode="conv-2",
        actor="agent-9",
        valid_from=_at(2024, 2, 1),
    )
    say("step", f"2. agent-9 says rust-lang uses cargo: {again.outcome} (same fact, via alias)")
    before_move = memory.log.last_recorded_at()
    moved = memory.assert_fact(
        subject="Alice",
        subject_type="person",
        relation="employed_by",
        object="Globex",
        object_type="organization",
        fact="Alice works at Globex",
        confidence=0.9,
        valid_from=_at(2024, 6, 1),
        episode="conv-3",
        actor="agent-7",
    )
    say("step", f"3. Alice changed employer to Globex on 2024-06-01: {moved.outcome}")
    late = memory.assert_fact(
        subject="Alice",
        subject_type="person",
        relation="works_at",
        object="Initech",
        object_type="organization",
        fact="Alice worked at Initech",
        confidence=0.8,
        valid_from=_at(2018, 9, 1),
        episode="conv-4",
        actor="agent-3",
    )
    say("step", f"4. a late report: Alice worked at Initech from 2018-09-01: {late.outcome}")
    _time_travel(memory, before_move, say)
    return _report(memory, moved, say)


def _time_travel(memory: Memory, before_move: datetime | None, say: Any) -> None:
    def employers(facts: list[Any]) -> str:
        found = [f.object for f in facts if f.relation == "works_at" and f.subject == "Alice"]
        return ", ".join(str(name) for name in found) or "nobody"

    say("step", "5. time travel, from the read models:")
    say("step", f"   Alice's employer now: {employers(memory.facts_about('Alice'))}")
    on = _at(2019, 6, 1)
    say("step", f"   valid at 2019-06-01: {employers(memory.facts_about('Alice', valid_at=on))}")
    if before_move is not None:
        then = memory.as_of(known_at=before_move).facts_about("Alice")
        say("step", f"   as the memory knew it before step 3: {employers(then)}")


def _report(memory: Memory, moved: FactRef, say: Any) -> dict[str, Any]:
    current = memory.current_facts()
    say("facts", current)
    history = memory.history(fact=moved.fact_id)
    say("history", history)
    report = memory.verify()
    say("verify", report)
    return {"current": current, "history": history, "verify": report}
