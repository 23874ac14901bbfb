"""`apexmem export` piped into `apexmem ingest`, as real subprocesses: the copy answers as
the original does."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from pg_schemas import postgres_schema

from apexmem import Memory
from apexmem.events.episode import MessageRecorded

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]
PEOPLE = ("Alice", "Bob", "Robert")


def _run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*APEXMEM, *args], input=stdin, capture_output=True, timeout=120, check=False
    )


def _person(subject: str, relation: str, obj: str, object_type: str, **more: Any) -> dict[str, Any]:
    return {
        "subject": subject,
        "subject_type": "person",
        "relation": relation,
        "object": obj,
        "object_type": object_type,
        **more,
    }


def _story(directory: Path) -> None:
    """Facts, a supersession, a late fact, a reinforcement with a later start and a late
    fact inside it (split in two), reinforcements in other words, an alias, a retraction,
    an ended fact, a value, a note, a merge that moves facts, relation mappings, a decay
    rate and a conversation."""
    with Memory.open(directory) as memory:
        memory.map_relation(canonical="works_at", aliases=["employed_by"], cardinality="one")
        memory.map_relation(canonical="lives_in", cardinality="one")
        memory.set_decay_rate("temporal", 0.05)
        memory.assert_facts(
            [
                _person("Alice", "works_at", "Acme", "organization", valid_from=_day(2021, 3)),
                _person("Bob", "knows", "Alice", "person", valid_from=_day(2020, 5)),
                _person("Bob", "lives_in", "Lisbon", "location", valid_from=_day(2023, 9)),
                _person("Robert", "likes", "Jazz", "concept", valid_from=_day(2019, 1)),
            ],
        )
        globex = _person("Alice", "employed_by", "Globex", "organization", valid_from=_day(2024, 6))
        memory.assert_fact(**globex, actor="hr", episode="conv-2")
        late = _person("Alice", "works_at", "Initech", "organization", valid_from=_day(2018, 9))
        memory.assert_fact(**late, fact="Alice worked at Initech")
        again = _person("Bob", "lives_in", "Lisbon", "location", valid_from=_day(2024, 1))
        memory.assert_fact(**again, confidence=0.7)
        porto = _person("Bob", "lives_in", "Porto", "location", valid_from=_day(2023, 11))
        memory.assert_fact(**porto)  # late, between Lisbon's start and its restart
        memory.assert_fact(**globex, fact="Alice is employed by Globex")
        memory.assert_fact(**globex, confidence=0.95)
        memory.assert_fact(subject="Alice", subject_type="person", relation="age", value="41")
        note = "Alice prefers tea in the morning"
        memory.assert_fact(subject="Alice", subject_type="person", relation="note", fact=note)
        ended = memory.assert_fact(
            **_person("Bob", "uses", "Vim", "tool", valid_from=_day(2015, 1))
        )
        wrong = memory.assert_fact(**_person("Alice", "knows", "Carol", "person"))
        memory.add_alias(entity="Alice", entity_type="person", alias="Ally")
        memory.retract(wrong.fact_id, reason="never met")
        memory.retract(ended.fact_id, valid_until=_day(2022, 1), reason="moved on")
        memory.merge(source="Robert", target="Bob", entity_type="person", reason="same man")
        for at, speaker, text in (
            ("2025-01-02T10:00:00Z", "Alice", "I moved to Globex in June."),
            ("2025-01-02T10:01:00Z", "Bob", "Still in Lisbon, still on jazz."),
        ):
            memory.record_message(episode="chat-1", speaker=speaker, text=text, at=at, ref="r1")


def _day(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _answers(directory: Path) -> dict[str, Any]:
    """What the memory says: facts about each person (now, and valid in 2019), each
    person's history without positions or times, entities with their names, messages."""
    with Memory.open(directory, create=False) as memory:
        view = memory.as_of()
        answers: dict[str, Any] = {}
        for name in PEOPLE:
            for at in (None, datetime(2019, 6, 1, tzinfo=UTC)):
                rows = view.facts_about(name, valid_at=at, include_faded=True)
                answers[f"{name} {at}"] = [_without_times(r) for r in rows]
            answers[f"{name} history"] = [
                (e.tag, _without_times(e.data)) for e in memory.history(entity=name)
            ]
        answers["entities"] = [_without_times(e) for e in view.entities(None, limit=100)]
        answers["messages"] = [
            (e.episode, e.data.speaker, e.data.text, e.data.at, e.data.ref)
            for e in memory.events(tags=[MessageRecorded.__struct_config__.tag])  # type: ignore[list-item]
        ]
        answers["found"] = sorted(h.text for h in view.search_messages("Lisbon"))
        answers["rates"] = memory.decay_rates()
    return answers


def _without_times(value: Any) -> dict[str, Any]:
    """A row or event payload without what a copy records anew (when, where, how often)."""
    fields: dict[str, Any] = msgspec.to_builtins(value)
    for key in ("recorded_at", "expired_at", "asserted_at", "first_seen", "last_seen", "position"):
        fields.pop(key, None)
    return fields


def test_export_piped_into_ingest_makes_a_memory_that_answers_the_same(tmp_path: Path) -> None:
    original, copy = tmp_path / "original", tmp_path / "copy"
    _story(original)

    exported = _run("--db", str(original), "export", "--format", "jsonl")
    ingested = _run("--db", str(copy), "ingest", "-", stdin=exported.stdout)

    assert exported.returncode == 0, exported.stderr
    assert ingested.returncode == 0, ingested.stdout + ingested.stderr
    ops = [json.loads(line)["op"] for line in exported.stdout.splitlines()]
    assert {"entity", "alias", "assert", "retract", "merge", "message"} <= set(ops)
    assert {"map-relation", "decay-rate"} <= set(ops)
    before, after = _answers(original), _answers(copy)
    assert before["Alice None"], "the story has facts about Alice"
    for key in before:
        assert after[key] == before[key], key


def test_a_postgresql_memory_exported_to_a_file_and_ingested_into_a_directory_answers_the_same(
    tmp_path: Path,
) -> None:
    copy, out = tmp_path / "copy", tmp_path / "log.jsonl"
    with postgres_schema("export") as url:
        with Memory.open(url) as memory:
            memory.assert_fact(**_person("Alice", "works_at", "Acme", "organization"))
            memory.assert_fact(**_person("Alice", "works_at", "Globex", "organization"))
            before = _facts_and_history(memory)

        exported = _run("--db", url, "export", "--out", str(out))
    ingested = _run("--db", str(copy), "ingest", str(out))

    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == b""
    assert ingested.returncode == 0, ingested.stdout + ingested.stderr
    with Memory.open(copy, create=False) as memory:
        after = _facts_and_history(memory)
    assert after == before
    assert [tag for tag, _ in before[1]][-2:] == ["fact-superseded.v1", "fact-asserted.v1"]


def _facts_and_history(memory: Memory) -> tuple[list[Any], list[Any]]:
    facts = [_without_times(r) for r in memory.as_of().facts_about("Alice")]
    return facts, [(e.tag, _without_times(e.data)) for e in memory.history(entity="Alice")]
