"""`apexmem assert` and `apexmem retract` for one fact from a shell, the short ids the
tables print, and the exit statuses (1 found nothing, 2 bad input), as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from apexmem import Memory
from apexmem.cli import main

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]
ALICE = ["Alice", "works_at"]
TYPES = ["--subject-type", "person", "--object-type", "organization"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args], capture_output=True, text=True, timeout=120, check=False
    )


def _in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`main` with these arguments in this process (the same exit statuses, no start-up
    cost): its exit status, stdout and stderr."""
    saved = sys.argv
    sys.argv = ["apexmem", *args]
    try:
        main()
        status = 0
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 1
    finally:
        sys.argv = saved
    out, err = capsys.readouterr()
    return status, out, err


def _events(db: Path) -> int:
    with Memory.open(db, create=False) as memory:
        return memory.head().position


def test_assert_writes_one_fact_and_refuses_bad_input_by_option_writing_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "mem")

    made = _run("--db", db, "--json", "assert", *ALICE, "Acme", *TYPES,
                "--valid-from", "2024-01-01T00:00:00Z", "--fact", "Alice joined Acme",
                "--episode", "onboarding", "--actor", "hr")  # fmt: skip
    written = _events(tmp_path / "mem")
    backwards = _run("--db", db, "assert", *ALICE, "Globex", *TYPES, "--valid-from",
                     "2025-01-01T00:00:00Z", "--valid-until", "2024-01-01T00:00:00Z")  # fmt: skip
    naive = _in_process(
        capsys, "--db", db, "assert", *ALICE, "Globex", "--valid-from", "2025-01-01"
    )
    typo = _in_process(capsys, "--db", db, "assert", *ALICE, "Globex", "--subject-type", "persn")
    nothing = _in_process(capsys, "--db", db, "assert", *ALICE)
    both = _in_process(capsys, "--db", db, "assert", *ALICE, "Globex", "--value", "Globex")

    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["outcome"] == "created"
    with Memory.open(tmp_path / "mem", create=False) as memory:
        [row] = memory.as_of().facts_about("Alice")
        [asserted] = [e for e in memory.history(entity="Alice") if e.tag == "fact-asserted.v1"]
    assert (row.object, row.fact, row.episode, row.actor) == (
        "Acme", "Alice joined Acme", "onboarding", "hr",
    )  # fmt: skip
    assert asserted.actor == "hr"
    assert backwards.returncode == 2
    assert "--valid-until: '2024-01-01T00:00:00+00:00' is not after valid_from" in backwards.stderr
    assert naive[0] == 2 and "--valid-from: '2025-01-01' has no timezone" in naive[2]
    assert typo[0] == 2 and "'--subject-type': 'persn' is not one of 'person'" in typo[2]
    assert nothing[0] == 2 and "OBJECT: None is missing: give OBJECT, --value" in nothing[2]
    assert both[0] == 2 and "--value: 'Globex' cannot be given together with object" in both[2]
    assert _events(tmp_path / "mem") == written


def test_retract_takes_the_short_id_the_table_prints_and_names_what_it_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "mem"
    with Memory.open(db) as memory:
        memory.map_relation(canonical="lives_in", cardinality="one")
        first = memory.assert_fact(subject="Alice", subject_type="person", relation="lives_in",
                                   object="Lisbon", valid_from="2020-01-01T00:00:00Z")  # fmt: skip
        memory.assert_fact(subject="Alice", subject_type="person", relation="lives_in",
                           object="Berlin", valid_from="2023-01-01T00:00:00Z")  # fmt: skip
    table = _run("--db", str(db), "facts", "Alice", "--valid-at", "2021-01-01T00:00:00Z")
    lines = [line.split() for line in table.stdout.splitlines() if "Lisbon" in line]
    assert len(lines) == 1, table.stdout + table.stderr
    short = lines[0][-2]
    slot = short.split(":")[0]

    ambiguous = _in_process(capsys, "--db", str(db), "retract", slot, "--reason", "moved")
    unknown = _in_process(capsys, "--db", str(db), "retract", "abcd:7", "--reason", "moved")
    not_an_id = _in_process(capsys, "--db", str(db), "retract", "Lisbon", "--reason", "moved")
    done = _run("--db", str(db), "--json", "retract", short, "--reason", "never lived there")
    history = _in_process(capsys, "--db", str(db), "--json", "history", "--fact", slot)

    assert short == f"{str(first.fact_id)[:8]}:1", table.stdout
    assert ambiguous[0] == 2 and f"'{slot}' is ambiguous" in ambiguous[2]
    assert f"{slot}:1" in ambiguous[2] and f"{slot}:3" in ambiguous[2]
    assert unknown[0] == 1 and "no fact id starts with 'abcd:7'" in unknown[2]
    assert not_an_id[0] == 2 and "FACT_ID: 'Lisbon' is not an id" in not_an_id[2]
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["fact_id"] == str(first.fact_id)
    *_, last = json.loads(history[1])
    assert (last["tag"], last["data"]["reason"]) == ("fact-retracted.v1", "never lived there")
