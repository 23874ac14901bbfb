"""The `apexmem` command line, run as a real subprocess."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


GOOD = {
    "op": "assert",
    "subject": "Alice",
    "subject_type": "person",
    "relation": "works_at",
    "object": "Acme",
    "object_type": "organization",
    "valid_from": "2024-01-01T00:00:00Z",
}


def test_ingest_keeps_good_lines_and_reports_bad_ones_by_line_number(tmp_path: Path) -> None:
    db = str(tmp_path / "mem")
    lines = [
        json.dumps(GOOD),
        '{"op": "assert", "subject": " ", "relation": "knows", "object": "Bob"}',
        "not json",
        json.dumps({**GOOD, "object": "Globex", "valid_from": "2025-01-01T00:00:00Z"}),
        json.dumps({**GOOD, "valid_from": "2025-01-01T00:00:00"}),
        json.dumps(
            {
                "op": "message",
                "episode": "c1",
                "speaker": "user",
                "text": "hi",
                "at": "2025-01-02T00:00:00Z",
            }
        ),
        json.dumps({**GOOD, "confidence": 1.5}),
    ]

    result = _run("--db", db, "--json", "ingest", "-", stdin="\n".join(lines) + "\n")

    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["lines"] == 7
    assert report["applied"] == 3
    failed = {f["line"]: f["error"] for f in report["failed"]}
    assert sorted(failed) == [2, 3, 5, 7]
    assert "subject" in failed[2]
    assert "empty" in failed[2]
    assert "JSON" in failed[3]
    assert "naive" in failed[5]
    assert failed[7].startswith("confidence: 1.5 is invalid")
    assert "<= 1.0" in failed[7]


def test_log_history_and_verify_tell_what_happened(tmp_path: Path) -> None:
    db = str(tmp_path / "mem")
    second = {**GOOD, "object": "Globex", "valid_from": "2025-01-01T00:00:00Z"}
    _run("--db", db, "ingest", "-", stdin=json.dumps(GOOD) + "\n" + json.dumps(second) + "\n")

    log = json.loads(_run("--db", db, "--json", "log", "--tag", "fact-asserted.v1").stdout)
    fact_id = log[-1]["data"]["fact_id"]
    history = json.loads(_run("--db", db, "--json", "history", "--fact", fact_id).stdout)
    verified = _run("--db", db, "verify")

    assert [e["data"]["object_id"] is not None for e in log] == [True, True]
    assert [e["tag"] for e in history] == [
        "fact-asserted.v1",
        "fact-superseded.v1",
        "fact-asserted.v1",
    ]
    assert all(len(e["chain"]) == 64 for e in history)
    assert verified.returncode == 0
    assert "chain ok" in verified.stdout


def test_verify_names_the_first_bad_position_after_tampering(tmp_path: Path) -> None:
    db = tmp_path / "mem"
    _run("--db", str(db), "ingest", "-", stdin=json.dumps(GOOD) + "\n")
    with sqlite3.connect(db / "events.db") as connection:
        connection.execute(
            "UPDATE stored_events SET state = replace(state, 'Alice', 'Mallory') WHERE rowid = 1"
        )

    result = _run("--db", str(db), "--json", "verify")

    assert result.returncode == 1
    assert json.loads(result.stdout)["first_bad_position"] == 1


def test_the_demo_tells_its_story_and_verifies(tmp_path: Path) -> None:
    result = _run("--db", str(tmp_path / "demo"), "demo")

    assert result.returncode == 0, result.stderr
    assert "superseded" in result.stdout
    assert "historical" in result.stdout
    assert "verify: ok=True" in result.stdout


def test_init_writes_settings_that_load_back(tmp_path: Path) -> None:
    db = tmp_path / "mem"

    result = _run("--db", str(db), "init")
    again = _run("--db", str(db), "--json", "verify")

    assert result.returncode == 0, result.stderr
    assert (db / "apexmem.toml").exists()
    assert json.loads(again.stdout)["ok"] is True


def test_apexmem_home_chooses_the_directory(tmp_path: Path) -> None:
    env_db = tmp_path / "from-env"

    result = subprocess.run(
        [*APEXMEM, "--json", "ingest", "-"],
        input=json.dumps(GOOD) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"APEXMEM_HOME": str(env_db), "PATH": "/usr/bin:/bin"},
    )

    assert result.returncode == 0, result.stderr
    assert (env_db / "events.db").exists()


def test_db_and_json_may_follow_the_command_and_override_the_group(tmp_path: Path) -> None:
    db = str(tmp_path / "mem")
    elsewhere = tmp_path / "elsewhere"
    _run("--db", db, "ingest", "-", stdin=json.dumps(GOOD) + "\n")

    before = _run("--db", db, "--json", "log")
    after = _run("--db", str(elsewhere), "log", "--json", "--db", db)
    served = _run("serve", "--help")

    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout) == json.loads(before.stdout)
    assert [e["tag"] for e in json.loads(after.stdout)][-1] == "fact-asserted.v1"
    assert not elsewhere.exists()
    assert "Memory to serve" in served.stdout  # serve keeps its own --db
    assert "as `apexmem --db DIR`" not in served.stdout
