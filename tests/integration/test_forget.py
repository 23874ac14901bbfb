"""Forget (issue 29): erased content is gone from every view and every byte of every file the
memory keeps, the chain still verifies and still finds any other edit, and the erasure is
an event of its own."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Final

import msgspec
import pytest

from apexmem import Memory
from apexmem.cli.export import export_lines
from apexmem.domain.commands import AddAlias
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events.erasure import Erased, RecordsErased
from apexmem.events.errors import ValidationError
from apexmem.events.log import EventLog
from apexmem.replay.migrate import migrate
from apexmem.replay.verify import verify
from apexmem.service.results import AliasRef

ERASED: Final = (
    "Priya",
    "priya",
    "PRIYA",
    "p. shah",
    "1987-03-14",
    "climbing",
    "loves",
)
"""Her names (as typed, normalized and in FTS tokens), a literal value about her, and
words only the message that mentions her holds."""
KILLED: Final = Path(__file__).with_name("killed_forget_process.py")
KEPT: Final = ("Bob Stone works at Acme Corp", "Bob Stone likes Rust")


def _fill(memory: Memory) -> None:
    memory.assert_fact(
        subject="Priya Shah", subject_type="person", relation="works_at",
        object="Acme Corp", object_type="organization",
        fact="Priya Shah works at Acme Corp", episode="conv-1", actor="agent",
    )  # fmt: skip
    memory.add_alias(entity="Priya Shah", alias="P. Shah", entity_type="person")
    memory.assert_fact(
        subject="Bob Stone", subject_type="person", relation="manages",
        object="Priya Shah", object_type="person", fact="Bob Stone manages Priya Shah",
    )  # fmt: skip
    memory.assert_fact(
        subject="Priya Shah", subject_type="person", relation="born_on",
        value="1987-03-14", fact="Priya Shah was born on 1987-03-14",
    )  # fmt: skip
    memory.assert_fact(
        subject="Bob Stone", subject_type="person", relation="works_at",
        object="Acme Corp", object_type="organization", fact="Bob Stone works at Acme Corp",
    )  # fmt: skip
    memory.add_messages(
        episode="conv-7",
        messages=[
            {"speaker": "user", "text": "I met Priya Shah yesterday, she loves climbing"},
            {"speaker": "user", "text": "Bob Stone likes Rust"},
        ],
    )
    memory.extract_pending()


def _found_in_files(directory: Path, words: tuple[str, ...]) -> list[tuple[str, str]]:
    """Every (file, word) such that the file's raw bytes hold the word (UTF-8)."""
    found = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [(path.name, w) for w in words if w.encode() in data]
    return found


def _views(memory: Memory) -> tuple[list[str], list[str]]:
    """The entity names and the current fact sentences the read models hold."""
    entities = memory.entities(limit=1000)
    facts = {
        f.fact for e in entities for f in memory.facts_about(e.name, entity_type=e.entity_type)
    }
    return sorted(e.name for e in entities), sorted(facts)


@pytest.fixture
def filled(memory: Memory) -> Memory:
    _fill(memory)
    return memory


def test_forgetting_an_entity_leaves_its_strings_in_no_file_and_the_chain_verifies(
    filled: Memory,
) -> None:
    assert _found_in_files(filled.directory, ERASED)

    report = filled.forget(
        entity="Priya Shah", entity_type="person", reason="erasure request #123", actor="dpo"
    )

    assert report.erased > 0 and report.entities == 1 and report.messages == 1
    assert _found_in_files(filled.directory, ERASED) == []
    assert all(_found_in_files(filled.directory, (k,)) for k in KEPT)
    assert filled.verify().ok


def test_after_forgetting_no_view_shows_the_entity(filled: Memory) -> None:
    filled.forget(entity="P. Shah", entity_type="person", reason="erasure request #123")

    texts = [h.text for h in filled.recall("Priya Shah climbing born")]
    names, facts = _views(filled)
    acme = [f.fact for f in filled.facts_about("Acme Corp")]
    assert not any("Priya" in t for t in texts + names + facts + acme)
    assert filled.search_messages("climbing") == []
    assert filled.entities(limit=1000) and "Bob Stone works at Acme Corp" in acme
    changed = msgspec.json.encode(filled.diff("2000-01-01T00:00:00Z", "2100-01-01T00:00:00Z"))
    logged = msgspec.json.encode([*filled.events(), filled.snapshot()])
    exported = b"".join(export_lines(filled.events()))
    assert b"Bob Stone works at Acme Corp" in changed and b"Priya" not in changed
    assert b"Priya" not in logged
    assert b"Bob Stone works at Acme Corp" in exported and b"Priya" not in exported
    history = filled.history(entity="Priya Shah", entity_type="person")
    assert any(isinstance(e.data, Erased) for e in history)
    assert isinstance(history[-1].data, RecordsErased)
    assert history[-1].data.reason == "erasure request #123"


def test_the_read_models_after_a_forget_are_those_a_replay_of_the_log_builds(
    filled: Memory, tmp_path: Path
) -> None:
    before_names, before_facts = _views(filled)

    filled.forget(entity="Priya Shah", reason="erasure request #123")
    replayed = filled.replay(until=filled.log.last_position(), into=tmp_path / "copy")

    try:
        assert _views(replayed) == _views(filled)
        assert replayed.verify().ok
        assert _found_in_files(tmp_path / "copy", ERASED) == []
    finally:
        replayed.close()
    names, facts = _views(filled)
    assert set(facts) == {f for f in before_facts if "Priya" not in f}
    assert sorted(f.fact for f in filled.current_facts()) == facts
    assert set(names) == set(before_names) - {"Priya Shah"}


def test_forgetting_a_conversation_erases_its_messages_and_what_was_read_out_of_them(
    filled: Memory,
) -> None:
    report = filled.forget(episode="conv-7", reason="user deleted the conversation")

    assert report.messages == 2
    assert _found_in_files(filled.directory, ("climbing", "likes Rust")) == []
    assert filled.search_messages("Rust") == []
    assert "Bob Stone works at Acme Corp" in _views(filled)[1]
    assert filled.verify().ok


def test_forgetting_twice_is_a_no_op(filled: Memory) -> None:
    filled.forget(entity="Priya Shah", entity_type="person", reason="erasure request #123")
    last = filled.log.last_position()

    again = filled.forget(entity="Priya Shah", entity_type="person", reason="again")

    assert (again.erased, again.position) == (0, None)
    assert filled.log.last_position() == last


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"entity": "Nobody Here", "reason": "r"}, "entity"),
        ({"episode": "conv-404", "reason": "r"}, "episode"),
        ({"entity": "Priya Shah"}, "reason"),
        ({"entity": "Priya Shah", "reason": "  "}, "reason"),
        ({"entity": "Priya Shah", "entity_type": "planet", "reason": "r"}, "entity_type"),
        ({"reason": "r"}, "forget"),
        ({"entity": "Priya Shah", "episode": "conv-7", "reason": "r"}, "forget"),
    ],
)
def test_a_bad_forget_names_the_field_and_writes_nothing(
    filled: Memory, arguments: dict[str, str], field: str
) -> None:
    last = filled.log.last_position()

    with pytest.raises(ValidationError) as raised:
        filled.forget(**arguments)

    assert raised.value.field == field
    assert filled.log.last_position() == last


def _edit(path: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(path / "events.db") as db:
        db.execute(sql, params)
    db.close()


def _reopened_verify(directory: Path, clock: Callable[[], datetime]) -> tuple[bool, int | None]:
    with Memory.open(directory, clock=clock, embedder=HashingEmbedder()) as memory:
        report = memory.verify()
    return report.ok, report.first_bad_position


def test_verify_after_a_forget_still_finds_an_edit_of_any_other_record(
    filled: Memory, clock: Callable[[], datetime]
) -> None:
    filled.forget(entity="Priya Shah", entity_type="person", reason="erasure request #123")
    directory = filled.directory
    filled.close()

    _edit(directory, "UPDATE stored_events SET state = replace(state, 'Rust', 'Ruby')")

    ok, bad = _reopened_verify(directory, clock)
    assert not ok and bad is not None


def test_verify_finds_a_record_blanked_outside_forget(
    filled: Memory, clock: Callable[[], datetime]
) -> None:
    directory = filled.directory
    filled.close()

    _edit(
        directory,
        'UPDATE stored_events SET state = CAST(\'{"erased":true,"recorded_at":\' || '
        "substr(CAST(state AS TEXT), 16, 30) || '}' AS BLOB) WHERE rowid = 3",
    )

    assert _reopened_verify(directory, clock) == (False, 3)


def test_verify_finds_an_edited_blanked_record_or_erasure_event(
    filled: Memory, clock: Callable[[], datetime]
) -> None:
    report = filled.forget(entity="Priya Shah", entity_type="person", reason="request #123")
    directory = filled.directory
    filled.close()
    assert report.position is not None

    _edit(
        directory,
        "UPDATE stored_events SET state = replace(state, '\"erased\":true,', "
        '\'"erased":true,"actor":"x",\') WHERE rowid = 1',
    )
    assert _reopened_verify(directory, clock) == (False, 1)
    _edit(directory, "UPDATE stored_events SET state = replace(state, ',\"actor\":\"x\"', '')")
    _edit(
        directory,
        "UPDATE stored_events SET state = replace(state, 'request #123', 'request #124') "
        "WHERE rowid = ?",
        report.position,
    )
    assert _reopened_verify(directory, clock) == (False, report.position)


def test_a_replay_cut_before_the_erasure_carries_the_blanks_and_verifies_by_them(
    filled: Memory, tmp_path: Path
) -> None:
    cut = filled.log.last_position()
    report = filled.forget(entity="Priya Shah", entity_type="person", reason="request #123")
    assert report.position is not None

    replayed = filled.replay(until=cut, into=tmp_path / "before")

    try:
        verified = replayed.verify()
        assert verified.ok
        assert verified.erased_elsewhere == [
            f"{report.position}:{filled.log.chains([report.position])[report.position].hex()}"
        ]
        assert _found_in_files(tmp_path / "before", ERASED) == []
        assert not any("Priya" in f for f in _views(replayed)[1])
    finally:
        replayed.close()


def test_a_migrated_copy_carries_the_blanks_and_verifies(filled: Memory, tmp_path: Path) -> None:
    filled.forget(entity="Priya Shah", entity_type="person", reason="request #123")

    target = EventLog(tmp_path / "migrated.db")
    try:
        migrated = migrate(filled.log, target)
        assert verify(target).ok
        assert migrated.events == filled.log.count()
    finally:
        target.close()
    assert _found_in_files(tmp_path, ERASED) == []


def _killed_forget(directory: Path, mode: str) -> int:
    done = subprocess.run(
        [sys.executable, str(KILLED), str(directory), mode],
        capture_output=True,
        timeout=60,
        check=False,
    )
    return done.returncode


def test_a_forget_killed_after_its_commit_is_finished_when_the_memory_opens_again(
    filled: Memory, clock: Callable[[], datetime]
) -> None:
    directory = filled.directory
    filled.close()

    assert _killed_forget(directory, "committed") == -signal.SIGKILL
    reopened = Memory.open(directory, clock=clock, embedder=HashingEmbedder())

    try:
        assert reopened.verify().ok
        assert not any("Priya" in n for n in _views(reopened)[0])
    finally:
        reopened.close()
    assert _found_in_files(directory, ERASED) == []


def test_a_forget_killed_before_its_commit_erased_nothing(
    filled: Memory, clock: Callable[[], datetime]
) -> None:
    directory = filled.directory
    before = _views(filled)
    last = filled.log.last_position()
    filled.close()

    assert _killed_forget(directory, "blanked") == -signal.SIGKILL
    reopened = Memory.open(directory, clock=clock, embedder=HashingEmbedder())

    try:
        assert reopened.verify().ok
        assert reopened.log.last_position() == last
        assert _views(reopened) == before
        assert not any(isinstance(e.data, Erased) for e in reopened.events())
    finally:
        reopened.close()


APEXMEM: Final = [sys.executable, "-c", "from apexmem.cli import main; main()"]


def _cli(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, "--db", str(directory), *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.slow  # three apexmem processes, ~1.5 s of start-up each
def test_apexmem_forget_erases_an_entity_and_refuses_without_a_reason(filled: Memory) -> None:
    directory = filled.directory
    filled.close()

    refused = _cli(directory, "forget", "--entity", "Priya Shah")
    done = _cli(
        directory, "--json", "forget", "--entity", "Priya Shah", "--type", "person",
        "--reason", "erasure request #123", "--actor", "dpo",
    )  # fmt: skip
    episode = _cli(directory, "forget", "--episode", "conv-7", "--reason", "deleted")

    assert refused.returncode == 2 and "reason" in refused.stderr
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["entities"] == 1
    assert episode.returncode == 0 and "erased" in episode.stdout
    log = EventLog(directory / "events.db")
    try:
        assert verify(log).ok
    finally:
        log.close()
    assert _found_in_files(directory, (*ERASED, "likes Rust")) == []


def test_a_name_of_entities_of_two_types_needs_the_type(memory: Memory) -> None:
    memory.observe_entity(name="Jordan", entity_type="person")
    memory.observe_entity(name="Jordan", entity_type="location")

    with pytest.raises(ValidationError) as raised:
        memory.forget(entity="Jordan", reason="request #9")
    done = memory.forget(entity="Jordan", entity_type="location", reason="request #9")

    assert raised.value.field == "entity_type"
    assert done.entities == 1
    assert [e.entity_type for e in memory.entities("Jordan")] == ["person"]


def test_forgetting_an_entity_forgets_the_ones_merged_into_it(memory: Memory) -> None:
    memory.assert_fact(
        subject="P Shah", subject_type="person", relation="likes", object="Tea",
        fact="P Shah likes Tea",
    )  # fmt: skip
    memory.observe_entity(name="Priya Shah", entity_type="person")
    memory.merge(source="P Shah", target="Priya Shah", entity_type="person")

    report = memory.forget(entity="P Shah", entity_type="person", reason="request #5")

    assert report.entities == 2
    assert memory.entities("Shah") == [] and memory.facts_about("Tea") == []
    assert _found_in_files(memory.directory, ("Shah", "shah")) == []


def test_messages_waiting_for_extraction_are_extracted_before_the_erasure(
    memory: Memory,
) -> None:
    memory.add_messages(
        episode="conv-9",
        messages=[{"speaker": "user", "text": "Priya Shah moved to Leeds with Omar Farouk"}],
    )

    memory.forget(entity="Priya Shah", reason="request #7")  # extracted as a concept
    memory.extract_pending()

    assert _found_in_files(memory.directory, ("Priya", "priya", "moved")) == []
    assert memory.verify().ok


def test_a_later_summary_of_another_entity_that_names_it_is_erased(filled: Memory) -> None:
    filled.observe_entity(name="Bob Stone", entity_type="person", summary="Manager of Priya Shah")

    filled.forget(entity="Priya Shah", entity_type="person", reason="request #123")

    [bob] = filled.entities("Bob Stone")
    assert bob.summary is None
    assert _found_in_files(filled.directory, ERASED) == []


def test_a_retried_key_whose_append_was_erased_answers_without_the_erased_text(
    memory: Memory,
) -> None:
    first = memory.add_alias(entity="Priya Shah", alias="P. Shah", entity_type="person")
    keyed = memory.execute(
        [AddAlias(entity="Priya Shah", alias="Prinny Q", entity_type="person")],
        idempotency_key="k1",
    )
    memory.forget(entity="Priya Shah", entity_type="person", reason="request #8")

    again = memory.execute(
        [AddAlias(entity="Priya Shah", alias="Prinny Q", entity_type="person")],
        idempotency_key="k1",
    )

    assert first.alias and len(again) == len(keyed) == 1
    assert isinstance(again[0], AliasRef) and again[0].alias == ""
    assert _found_in_files(memory.directory, ("Prinny", "prinny")) == []


def test_a_forgotten_entity_told_again_is_a_new_entity_with_only_the_new_facts(
    filled: Memory,
) -> None:
    filled.forget(entity="Priya Shah", entity_type="person", reason="request #123")

    told = filled.assert_fact(
        subject="Priya Shah", subject_type="person", relation="works_at",
        object="Globex", object_type="organization",
    )  # fmt: skip

    views = _views(filled)
    filled.rebuild()

    assert told.outcome == "created" and told.supersedes is None
    assert [f.object for f in filled.facts_about("Priya Shah")] == ["Globex"]
    assert _views(filled) == views
    assert filled.verify().ok
