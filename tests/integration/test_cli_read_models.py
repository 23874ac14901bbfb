"""The read-model commands of `apexmem` (facts, entities, traverse, history, replay, rebuild,
diff, stats), run as real subprocesses against one memory prepared through the Python API.

The story, recorded at fixed times: on 2025-01-10 Alice works at Acme (since 2020), knows
Bob and uses Rust; on 2025-03-05 she moves to Globex (since 2025-03-01) and Globex causes an
outage; on 2025-04-01 her use of Rust is ended at 2025-03-31 and one message is recorded.
Every test but the rebuild one only reads it. Its settings turn confidence decay off: the
commands run at the wall clock, long after 2025, when every fact of the story would have
faded (these tests are about the time axes; tests/unit/test_decay_applied.py about decay).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from apexmem import Memory

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]

JANUARY = datetime(2025, 1, 10, 9, tzinfo=UTC)
MARCH = datetime(2025, 3, 5, 9, tzinfo=UTC)
APRIL = datetime(2025, 4, 1, 9, tzinfo=UTC)
BETWEEN = "2025-02-01T00:00:00Z"
"""After the first writes were recorded, before the move to Globex was."""


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def _run_together(*commands: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """Independent commands started at once (each still its own process)."""
    started = [
        subprocess.Popen(
            [*APEXMEM, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for args in commands
    ]
    done = []
    for process, args in zip(started, commands, strict=True):
        out, err = process.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(args, process.returncode, out, err))
    return done


def _person(subject: str, relation: str, obj: str, object_type: str, **more: Any) -> dict[str, Any]:
    return {
        "subject": subject,
        "subject_type": "person",
        "relation": relation,
        "object": obj,
        "object_type": object_type,
        **more,
    }


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The story's memory directory, written through the Python API at fixed times."""
    directory = tmp_path_factory.mktemp("cli") / "mem"
    now = [JANUARY]
    with Memory.open(directory, clock=lambda: now[0]) as memory:
        acme, _bob, rust = memory.assert_facts(
            [
                _person("Alice", "works_at", "Acme", "organization", valid_from=_day(2020, 1, 1)),
                _person("Alice", "knows", "Bob", "person", edge_type="entity"),
                _person("Alice", "uses", "Rust", "language", valid_from=_day(2021, 1, 1)),
            ]
        )
        now[0] = MARCH
        moved = memory.assert_fact(
            **_person("Alice", "works_at", "Globex", "organization", valid_from=_day(2025, 3, 1))
        )
        memory.assert_fact(
            subject="Globex",
            subject_type="organization",
            relation="caused",
            object="Outage",
            object_type="event",
            edge_type="causal",
        )
        now[0] = APRIL
        memory.retract(rust.fact_id, valid_until=_day(2025, 3, 31), reason="moved to Go")
        memory.record_message(episode="c1", speaker="user", text="Alice left Acme.", at=APRIL)
    assert moved.supersedes == acme.fact_id
    (directory / "apexmem.toml").write_text("[memory.graph]\ndefault_decay_rate = 0.0\n")
    return str(directory)


def _day(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def _objects(result: subprocess.CompletedProcess[str], relation: str) -> list[str]:
    assert result.returncode == 0, result.stderr
    return [f["object"] for f in json.loads(result.stdout) if f["relation"] == relation]


def test_facts_show_the_superseded_employer_at_an_older_valid_time_and_an_earlier_known_time(
    db: str,
) -> None:
    asked = ["--db", db, "--json", "facts", "Alice"]

    now, valid_then, known_then = _run_together(
        asked, [*asked, "--valid-at", "2024-06-01T00:00:00Z"], [*asked, "--known-at", BETWEEN]
    )

    assert _objects(now, "works_at") == ["Globex"]
    assert _objects(valid_then, "works_at") == ["Acme"]
    assert _objects(known_then, "works_at") == ["Acme"]
    assert _objects(now, "uses") == []
    assert _objects(known_then, "uses") == ["Rust"]


def test_a_log_position_opens_facts_and_recall_where_the_log_stood(db: str) -> None:
    with Memory.open(db) as memory:
        january = memory.log.position_at(datetime.fromisoformat(BETWEEN))
    at = ["--position", str(january)]

    facts, recalled, refused = _run_together(
        ["--db", db, "--json", "facts", "Alice", *at],
        ["--db", db, "--json", "recall", "What does Alice use?", *at],
        ["--db", db, "facts", "Alice", "--position", "-1"],
    )

    assert _objects(facts, "works_at") == ["Acme"]
    assert "Alice uses Rust" in [h["text"] for h in json.loads(recalled.stdout)["hits"]]
    assert refused.returncode == 2 and "position" in refused.stderr


def test_facts_about_an_unknown_entity_say_so_and_exit_1(db: str) -> None:
    result = _run("--db", db, "facts", "Mallory")

    assert result.returncode == 1
    assert "no entity named 'Mallory'" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_time_without_a_zone_is_refused_with_an_accepted_form(db: str) -> None:
    result = _run("--db", db, "facts", "Alice", "--valid-at", "2024-06-01T00:00:00")

    assert result.returncode == 2
    assert "--valid-at" in result.stderr
    assert "no timezone" in result.stderr
    assert "2024-06-01T12:00:00Z" in result.stderr


def test_entities_are_listed_in_name_order_or_found_by_prefix(db: str) -> None:
    listed, found, known_then = _run_together(
        ["--db", db, "--json", "entities"],
        ["--db", db, "--json", "entities", "al", "--type", "person"],
        ["--db", db, "--json", "entities", "--known-at", BETWEEN],
    )

    assert [e["name"] for e in json.loads(listed.stdout)] == [
        "Acme",
        "Alice",
        "Bob",
        "Globex",
        "Outage",
        "Rust",
    ]
    assert [e["name"] for e in json.loads(found.stdout)] == ["Alice"]
    assert [e["name"] for e in json.loads(known_then.stdout)] == ["Acme", "Alice", "Bob", "Rust"]


def test_traverse_follows_only_the_edge_types_asked_for(db: str) -> None:
    result = _run("--db", db, "--json", "traverse", "Alice", "--types", "causal,semantic")

    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert {e["name"]: e["hops"] for e in found["entities"]} == {
        "Alice": 0,
        "Globex": 1,
        "Outage": 2,
    }
    assert sorted(f["relation"] for f in found["facts"]) == ["caused", "works_at"]


def test_history_of_an_entity_needs_no_type_and_holds_its_slots(db: str) -> None:
    result = _run("--db", db, "--json", "history", "--entity", "alice")

    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)
    positions = [e["position"] for e in entries]
    assert positions == sorted(positions)
    assert {"entity-observed.v1", "fact-superseded.v1", "fact-retracted.v1"} <= {
        e["tag"] for e in entries
    }


def test_a_replay_answers_as_the_past_and_refuses_writes(db: str, tmp_path: Path) -> None:
    past = str(tmp_path / "past")
    alias = json.dumps({"op": "alias", "entity": "Alice", "entity_type": "person", "alias": "Al"})

    replayed = _run("--db", db, "--json", "replay", "--until", BETWEEN, "--into", past)
    asked = _run("--db", past, "--json", "facts", "Alice")
    written = _run("--db", past, "ingest", "-", stdin=alias + "\n")

    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["events"] > 0
    assert _objects(asked, "works_at") == ["Acme"]
    assert written.returncode != 0
    assert "read-only" in written.stderr


def test_a_replay_into_a_non_empty_directory_is_refused_and_touches_nothing(
    db: str, tmp_path: Path
) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "notes.txt").write_text("mine", encoding="utf-8")

    result = _run("--db", db, "replay", "--until", "3", "--into", str(target))

    assert result.returncode == 2
    assert "not an empty directory" in result.stderr
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    assert (target / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_rebuild_projects_the_whole_log_again_and_answers_the_same(db: str) -> None:
    with Memory.open(db) as memory:
        before = json.loads(msgspec.json.encode(memory.facts_about("Alice")))
        last = memory.log.last_position()

    rebuilt = _run("--db", db, "--json", "rebuild")
    after = _run("--db", db, "--json", "facts", "Alice")

    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["position"] == last
    assert json.loads(after.stdout) == before


def test_diff_lists_what_was_asserted_superseded_and_retracted_between_two_times(db: str) -> None:
    result = _run("--db", db, "--json", "diff", BETWEEN, "2025-05-01T00:00:00Z")

    assert result.returncode == 0, result.stderr
    changes = json.loads(result.stdout)
    assert sorted(c["fact"] for c in changes["asserted"]) == [
        "Alice works_at Globex",
        "Globex caused Outage",
    ]
    assert [c["fact"] for c in changes["superseded"]] == ["Alice works_at Acme"]
    assert [(c["fact"], c["detail"]) for c in changes["retracted"]] == [
        ("Alice uses Rust", "moved to Go")
    ]


def test_stats_count_the_log_and_the_read_models(db: str) -> None:
    result = _run("--db", db, "--json", "stats")

    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["projection_lag"] == 0
    assert stats["graph"]["position"] == stats["events"]
    assert stats["log_bytes"] > 0
    assert stats["readmodel_bytes"] > 0
    assert {k: stats["graph"][k] for k in ("entities", "fact_versions", "current_facts")} == {
        "entities": 6,
        "fact_versions": 5,
        "current_facts": 3,
    }
    assert (stats["graph"]["episodes"], stats["graph"]["messages"]) == (1, 1)
