"""A broken chain stops writes until it is recovered: the command line, as a real subprocess,
on a memory whose log was edited with sqlite3."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs apexmem 3 to 7 times, ~2 s of start-up each
APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]
NO_VECTORS = "[memory.vectors]\nenabled = false\n"


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def _line(subject: str, employer: str) -> str:
    return json.dumps(
        {
            "op": "assert",
            "subject": subject,
            "subject_type": "person",
            "relation": "works_at",
            "object": employer,
            "object_type": "organization",
        }
    )


def _memory(directory: Path) -> None:
    """A memory of two ingests."""
    directory.mkdir()
    (directory / "apexmem.toml").write_text(NO_VECTORS, encoding="utf-8")
    for subject, employer in (("Alice", "Acme"), ("Bob", "Globex")):
        done = _run("--db", str(directory), "ingest", "-", stdin=_line(subject, employer))
        assert done.returncode == 0, done.stderr


def _last_position(directory: Path) -> int:
    with sqlite3.connect(directory / "events.db") as db:
        [(last,)] = db.execute("SELECT MAX(rowid) FROM stored_events")
    db.close()
    return int(last)


def _first_with(directory: Path, text: str) -> int:
    with sqlite3.connect(directory / "events.db") as db:
        [(position,)] = db.execute(
            "SELECT MIN(rowid) FROM stored_events WHERE instr(state, ?) > 0", (text,)
        )
    db.close()
    return int(position)


def _tamper_text(directory: Path, position: int, old: str, new: str) -> None:
    with sqlite3.connect(directory / "events.db") as db:
        db.execute(
            "UPDATE stored_events SET state = replace(state, ?, ?) WHERE rowid = ?",
            (old, new, position),
        )
    db.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_after_verify_finds_a_bad_position_writes_are_refused_until_it_verifies_again(
    tmp_path: Path,
) -> None:
    mem = tmp_path / "mem"
    _memory(mem)
    bad = _first_with(mem, "Acme")
    _tamper_text(mem, bad, "Acme", "Acne")

    verified = _run("--db", str(mem), "verify")
    refused = _run("--db", str(mem), "ingest", "-", stdin=_line("Carol", "Initech"))
    read = _run("--db", str(mem), "--json", "stats")
    _tamper_text(mem, bad, "Acne", "Acme")  # a good copy restored
    again = _run("--db", str(mem), "verify")
    accepted = _run("--db", str(mem), "ingest", "-", stdin=_line("Carol", "Initech"))

    said = " ".join(refused.stderr.split())
    assert verified.returncode == 1
    assert refused.returncode != 0
    assert f"breaks at position {bad}" in said and "recover --to" in said
    assert "log.damaged" in said  # said on open
    assert read.returncode == 0
    assert again.returncode == 0 and not (mem / "damaged.json").exists()
    assert accepted.returncode == 0, accepted.stderr


def test_damage_at_the_end_of_the_chain_is_found_on_open_without_verify(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    _memory(mem)
    last = _last_position(mem)
    _tamper_text(mem, _first_with(mem, "Globex"), "Globex", "Glibex")

    write = _run("--db", str(mem), "ingest", "-", stdin=_line("Carol", "Initech"))

    assert write.returncode != 0
    assert "chain breaks at position" in " ".join(write.stderr.split())
    assert _last_position(mem) == last


def test_recover_copies_the_log_up_to_the_last_good_position_and_keeps_the_damaged_one(
    tmp_path: Path,
) -> None:
    mem, new = tmp_path / "mem", tmp_path / "recovered"
    _memory(mem)
    bad = _first_with(mem, "Globex")
    _tamper_text(mem, bad, "Globex", "Glibex")
    _run("--db", str(mem), "verify")
    damaged = _digest(mem / "events.db")

    recovered = _run("--db", str(mem), "--json", "recover", "--to", str(new))
    verified = _run("--db", str(new), "--json", "verify")
    write = _run("--db", str(new), "ingest", "-", stdin=_line("Carol", "Initech"))
    facts = _run("--db", str(new), "--json", "facts", "Alice")
    intact = _run("--db", str(new), "recover", "--to", str(tmp_path / "other"))

    assert recovered.returncode == 0, recovered.stderr
    report = json.loads(recovered.stdout)
    assert (report["kept_until"], report["first_bad_position"]) == (bad - 1, bad)
    assert json.loads(verified.stdout)["events_checked"] == bad - 1
    assert write.returncode == 0, write.stderr
    assert "Acme" in facts.stdout
    assert _digest(mem / "events.db") == damaged
    assert (new / "apexmem.toml").read_text(encoding="utf-8") == NO_VECTORS
    assert intact.returncode == 2 and "nothing to recover" in intact.stderr
    assert not (tmp_path / "other").exists()
