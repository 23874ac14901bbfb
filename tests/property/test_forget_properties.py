"""Properties of forget over random small memories: what remains is exactly what did not
involve the forgotten person, every view agrees with the log, the chain verifies, and any
one changed byte of any record, blanked or not, is still found at its position."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Final

from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events.log import EventLog
from apexmem.replay.verify import verify

PEOPLE: Final = ("Ann Lee", "Bo Chan", "Cy Diaz", "Di Eng")
RELATIONS: Final = ("knows", "works_with")
NO_VECTORS: Final = "[memory.vectors]\nenabled = false\n"

Facts = list[tuple[int, int, int]]
facts_strategy = st.lists(
    st.tuples(
        st.integers(0, len(PEOPLE) - 1),
        st.integers(0, len(RELATIONS) - 1),
        st.integers(0, len(PEOPLE) - 1),
    ).filter(lambda f: f[0] != f[2]),
    min_size=1,
    max_size=6,
)


def _sentence(fact: tuple[int, int, int]) -> str:
    subject, relation, obj = fact
    return f"{PEOPLE[subject]} {RELATIONS[relation]} {PEOPLE[obj]}"


def _memory(directory: Path, facts: Facts) -> Memory:
    directory.mkdir()
    (directory / "apexmem.toml").write_text(NO_VECTORS, encoding="utf-8")
    memory = Memory.open(directory, embedder=HashingEmbedder())
    memory.assert_facts(
        [
            {
                "subject": PEOPLE[s],
                "subject_type": "person",
                "relation": RELATIONS[r],
                "object": PEOPLE[o],
                "object_type": "person",
                "fact": _sentence((s, r, o)),
            }
            for s, r, o in facts
        ]
    )
    return memory


def _read_model_facts(memory: Memory) -> set[str]:
    return {
        f.fact
        for e in memory.entities(limit=100)
        for f in memory.facts_about(e.name, entity_type=e.entity_type)
    }


@settings(max_examples=12)
@given(facts=facts_strategy, forgotten=st.integers(0, len(PEOPLE) - 1))
def test_what_remains_is_what_did_not_involve_the_forgotten_person(
    facts: Facts, forgotten: int
) -> None:
    name = PEOPLE[forgotten]
    with tempfile.TemporaryDirectory() as scratch:
        memory = _memory(Path(scratch) / "mem", facts)
        try:
            if any(forgotten in (s, o) for s, _, o in facts):
                memory.forget(entity=name, entity_type="person", reason="request")
            remaining = {f.fact for f in memory.current_facts()}

            assert remaining == {_sentence(f) for f in facts if forgotten not in (f[0], f[2])}
            assert _read_model_facts(memory) == remaining
            assert name not in {e.name for e in memory.entities(limit=100)}
            assert memory.verify().ok
        finally:
            memory.close()


@settings(max_examples=12)
@given(facts=facts_strategy, at=st.integers(min_value=0), byte=st.integers(0, 255))
def test_one_changed_byte_of_any_record_is_found_after_a_forget(
    facts: Facts, at: int, byte: int
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "mem"
        memory = _memory(directory, facts)
        memory.forget(entity=PEOPLE[facts[0][0]], entity_type="person", reason="request")
        memory.close()
        with sqlite3.connect(directory / "events.db") as db:
            rows = db.execute("SELECT rowid, state FROM stored_events ORDER BY rowid").fetchall()
            position, state = rows[at % len(rows)]
            offset = (at // len(rows)) % len(state)
            if state[offset] == byte:
                byte = (byte + 1) % 256
            changed = state[:offset] + bytes([byte]) + state[offset + 1 :]
            db.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (changed, position))
        db.close()

        log = EventLog(directory / "events.db")
        try:
            report = verify(log)
        finally:
            log.close()

        assert not report.ok
        assert report.first_bad_position == position
