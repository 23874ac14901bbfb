"""`apexmem alias` and `apexmem merge` from a shell, and their exit statuses (1 found
nothing or not holding, 2 bad input with nothing written), as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from apexmem import Memory

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]
ORG = ["--type", "organization"]


def _run(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, "--db", str(db), *args], capture_output=True, text=True, timeout=120, check=False
    )


def _memory(tmp_path: Path) -> Path:
    """A memory where Alice works at Acme and Bob at ACME Inc (two organizations)."""
    db = tmp_path / "mem"
    with Memory.open(db) as memory:
        for subject, employer in (("Alice", "Acme"), ("Bob", "ACME Inc")):
            memory.assert_fact(
                subject=subject, relation="works_at", object=employer, object_type="organization"
            )
    return db


def _events(db: Path) -> int:
    with Memory.open(db, create=False) as memory:
        return memory.head().position


def _subjects(db: Path, name: str) -> list[str]:
    with Memory.open(db, create=False) as memory:
        found = memory.as_of().facts_about(name, entity_type="organization")
        return sorted(f.subject for f in found)


def test_an_alias_claimed_on_the_command_line_names_the_entity(tmp_path: Path) -> None:
    db = _memory(tmp_path)

    claimed = _run(db, "alias", "Acme", "Acme Corp", *ORG)
    again = _run(db, "--json", "alias", "Acme", "Acme Corp", *ORG)

    assert claimed.returncode == 0, claimed.stderr
    assert "'acme corp' claimed" in claimed.stdout
    assert _subjects(db, "Acme Corp") == ["Alice"]
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["outcome"] == "unchanged"


def test_an_alias_another_entity_owns_is_refused_with_status_1(tmp_path: Path) -> None:
    db = _memory(tmp_path)
    assert _run(db, "alias", "Acme", "The Company", *ORG).returncode == 0
    before = _events(db)

    refused = _run(db, "alias", "ACME Inc", "The Company", *ORG)

    assert refused.returncode == 1
    assert "ALIAS: 'The Company' already names another organization" in refused.stderr
    assert _events(db) == before


def test_a_merge_on_the_command_line_moves_the_facts_under_the_target(tmp_path: Path) -> None:
    db = _memory(tmp_path)

    merged = _run(db, "--json", "merge", "ACME Inc", "Acme", *ORG, "--reason", "same company")

    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout)["kind"] == "merge"
    assert _subjects(db, "Acme") == ["Alice", "Bob"]
    assert _subjects(db, "ACME Inc") == ["Alice", "Bob"]


def test_a_merge_naming_no_entity_exits_1_and_writes_nothing(tmp_path: Path) -> None:
    db = _memory(tmp_path)
    before = _events(db)

    missing = _run(db, "merge", "Globex", "Acme", *ORG)

    assert missing.returncode == 1
    assert "no organization is named 'Globex'" in missing.stderr
    assert _events(db) == before


def test_bad_input_to_alias_and_merge_exits_2_naming_the_argument(tmp_path: Path) -> None:
    db = _memory(tmp_path)
    before = _events(db)

    empty = _run(db, "alias", "Acme", "  ", *ORG)
    itself = _run(db, "merge", "Acme", "acme", *ORG)
    typo = _run(db, "merge", "ACME Inc", "Acme", "--type", "organisation")

    assert (empty.returncode, itself.returncode, typo.returncode) == (2, 2, 2)
    assert "ALIAS: '  ' is empty" in empty.stderr
    assert itself.stderr.startswith("error: TARGET: 'acme'")
    assert "--type" in typo.stderr
    assert _events(db) == before
