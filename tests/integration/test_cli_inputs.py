"""The `apexmem` command line, run as a real subprocess, given awkward input: rich markup in
names, bytes that are not UTF-8, a byte-order mark, numbers and times out of range, and
memory directories that are empty, files or impossible."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

APEXMEM = [sys.executable, "-c", "from apexmem.cli import main; main()"]

WIDE = {**os.environ, "COLUMNS": "250"}
"""Wide enough that no table cell is folded over two lines."""

EVIL = "[bold red]Evil[/bold red] Corp"
TOOL = "Tool [/]"
TEXT = "look at [x] and [/] :smile:"


def _run(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APEXMEM, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env or WIDE,
    )


def _line(**fields: str) -> str:
    return json.dumps(fields, ensure_ascii=False) + "\n"


def _ingested(db: str) -> None:
    lines = _line(
        op="assert", subject=EVIL, relation="uses", object=TOOL, valid_from="2024-01-01T00:00:00Z"
    ) + _line(op="message", episode="chat-1", speaker="user", text=TEXT, at="2024-01-02T00:00:00Z")
    assert _run("--db", db, "ingest", "-", stdin=lines).returncode == 0


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        pytest.param(["entities"], [EVIL, TOOL], id="entities"),
        pytest.param(["log"], [EVIL, TOOL, TEXT], id="log"),
        pytest.param(["facts", TOOL], [EVIL, TOOL], id="facts"),
        pytest.param(["traverse", TOOL], [EVIL, TOOL], id="traverse"),
        pytest.param(["history", "--entity", TOOL], [TOOL], id="history"),
        pytest.param(["recall", TOOL], [f"recall: {TOOL}", EVIL], id="recall"),
        pytest.param(["recall", "[/]"], ["recall: [/]"], id="recall-title"),
        pytest.param(
            ["diff", "2000-01-01T00:00:00Z", "2100-01-01T00:00:00Z"],
            [f"{EVIL} uses {TOOL}"],
            id="diff",
        ),
        pytest.param(["communities", "--detect"], [f"{EVIL} (1), {TOOL} (1)"], id="communities"),
    ],
)
def test_names_and_messages_with_rich_markup_print_as_stored(
    tmp_path: Path, command: list[str], shown: list[str]
) -> None:
    db = str(tmp_path / "mem")
    _ingested(db)

    result = _run("--db", db, *command)

    assert result.returncode == 0, result.stderr
    for text in shown:
        assert text in result.stdout


def test_a_line_that_is_not_utf8_is_reported_and_every_good_line_is_kept(tmp_path: Path) -> None:
    db = str(tmp_path / "mem")
    source = tmp_path / "lines.jsonl"
    good = [
        _line(op="assert", subject=f"Person {i}", relation="knows", object="Acme Corp")
        for i in range(600)
    ]
    latin1 = _line(op="assert", subject="Café Ltd", relation="knows", object="Acme Corp")
    source.write_bytes("".join(good).encode() + latin1.encode("latin-1") + good[0].encode())

    result = _run("--db", db, "--json", "ingest", str(source))
    shown = _run("--db", db, "ingest", str(source))

    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert (report["lines"], report["applied"]) == (602, 601)
    assert [f["line"] for f in report["failed"]] == [601]
    assert "is not UTF-8" in report["failed"][0]["error"]
    assert shown.returncode == 1
    assert "line 601: " in shown.stderr
    assert "Traceback" not in shown.stderr


def test_a_line_nested_too_deeply_is_reported_and_every_good_line_is_kept(tmp_path: Path) -> None:
    db = str(tmp_path / "mem")
    source = tmp_path / "lines.jsonl"
    good = [
        _line(op="assert", subject=f"Person {i}", relation="knows", object="Acme Corp")
        for i in range(3)
    ]
    deep = '{"op":"assert","subject":"a","relation":"r","value":' + "[" * 1_000 + "]" * 1_000
    nested = ['{"x":' + "[" * 1_000 + "]" * 1_000 + "}\n", deep + "}\n"]
    source.write_text("".join([good[0], nested[0], good[1], nested[1], good[2]]), "utf-8")

    result = _run("--db", db, "--json", "ingest", str(source))
    shown = _run("--db", db, "ingest", str(source))

    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert (report["lines"], report["applied"]) == (5, 3)
    assert [f["line"] for f in report["failed"]] == [2, 4]
    assert "nested too deeply" in report["failed"][0]["error"]
    assert report["failed"][1]["error"].startswith("value: ")
    assert shown.returncode == 1
    assert "line 2: " in shown.stderr and "line 4: " in shown.stderr
    assert "Traceback" not in shown.stderr


def test_a_byte_order_mark_before_the_first_line_is_ignored(tmp_path: Path) -> None:
    db = str(tmp_path / "mem")
    line = _line(op="assert", subject="Alice", relation="knows", object="Bob Smith")

    result = _run("--db", db, "--json", "ingest", "-", stdin="\ufeff" + line + line)

    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["failed"] == []


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (["log", "--limit", "-1"], "--limit"),
        (["log", "--limit", str(2**63)], "--limit"),
        (["log", "--start", str(2**63)], "--start"),
        (["entities", "--limit", str(2**63)], "--limit"),
        (["recall", "Alice", "--limit", str(2**63)], "--limit"),
    ],
)
def test_counts_and_positions_out_of_range_are_usage_errors_naming_the_option(
    tmp_path: Path, command: list[str], option: str
) -> None:
    result = _run("--db", str(tmp_path / "mem"), *command)

    assert result.returncode == 2
    assert f"Invalid value for '{option}'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (["facts", "Alice", "--valid-at", "0001-01-01T00:00:00+01:00"], "--valid-at"),
        (["facts", "Alice", "--known-at", "9999-12-31T23:59:59-01:00"], "--known-at"),
        (["replay", "--until", "9999-12-31T23:59:59-01:00", "--into", "past"], "--until"),
    ],
)
def test_a_time_outside_the_years_1_to_9999_in_utc_is_refused_naming_the_option(
    tmp_path: Path, command: list[str], option: str
) -> None:
    result = _run("--db", str(tmp_path / "mem"), *command)

    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {option}: ")
    assert "1-9999" in result.stderr


def test_an_empty_db_or_apexmem_home_is_refused_not_read_as_the_default(tmp_path: Path) -> None:
    env = {**WIDE, "HOME": str(tmp_path / "home"), "APEXMEM_HOME": ""}

    from_option = _run("--db", "", "log", env=env)
    from_env = _run("log", env=env)

    assert from_option.returncode == 2
    assert from_option.stderr.startswith("error: --db: '' is empty")
    assert from_env.returncode == 2
    assert from_env.stderr.startswith("error: APEXMEM_HOME: '' is empty")
    assert not (tmp_path / "home").exists()


def test_a_db_or_replay_target_that_cannot_be_a_directory_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "mem")
    _ingested(db)
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory", encoding="utf-8")

    is_a_file = _run("--db", str(a_file), "log")
    under_a_file = _run("--db", str(a_file / "mem"), "init")
    into = _run("--db", db, "replay", "--until", "1", "--into", str(a_file / "past"))

    assert is_a_file.returncode == 2
    assert is_a_file.stderr.startswith(f"error: --db: '{a_file}' is a file")
    assert under_a_file.returncode == 2
    assert under_a_file.stderr.startswith(f"error: --db: '{a_file / 'mem'}' cannot be created")
    assert into.returncode == 2
    assert into.stderr.startswith(f"error: --into: '{a_file / 'past'}' cannot be written")


def test_a_negative_replay_position_is_refused_as_a_position(tmp_path: Path) -> None:
    db = str(tmp_path / "mem")
    _ingested(db)

    result = _run("--db", db, "replay", "--until", "-1", "--into", str(tmp_path / "past"))

    assert result.returncode == 2
    assert "-1 is not a position of this log (0.." in result.stderr


def test_init_points_the_settings_file_at_the_readme(tmp_path: Path) -> None:
    db = tmp_path / "mem"

    result = _run("--db", str(db), "init")

    assert result.returncode == 0, result.stderr
    header = (db / "apexmem.toml").read_text(encoding="utf-8").splitlines()[0]
    assert "README.md, section Settings" in header


def test_recall_takes_its_limit_and_mode_from_the_settings_file(tmp_path: Path) -> None:
    db = str(tmp_path / "mem")
    lines = "".join(
        _line(op="assert", subject="Alice", relation="uses", object=f"Tool {n}")
        for n in ("One", "Two", "Three", "Four")
    )
    assert _run("--db", db, "ingest", "-", stdin=lines).returncode == 0
    (tmp_path / "mem" / "apexmem.toml").write_text(
        "[memory.graph]\nrecall_limit = 2\n[memory.graph.spreading_activation]\nenabled = true\n"
    )

    found = json.loads(_run("--db", db, "--json", "recall", "Alice tool").stdout)
    more = json.loads(_run("--db", db, "--json", "recall", "Alice tool", "--limit", "3").stdout)

    assert len(found["hits"]) == 2 and len(more["hits"]) == 3
    assert any(w.startswith("activation") for h in found["hits"] for w in h["why"])
