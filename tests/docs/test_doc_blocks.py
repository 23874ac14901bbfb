"""Every code block of README.md and docs/ runs, in order, one page at a time.

A page's ```python blocks share one namespace and its ```sh / ```bash / ```console blocks run
in bash with the real `apexmem` on PATH, all in a fresh temporary directory that is the
page's memory home. A block that cannot run here (a long-lived server, a host that does not
exist, a paid model, an install) says so just before it, `<!-- not-run: why -->`, and is
counted: NOT_RUN is the number of them, so one cannot be added without this file saying so.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Final

import msgspec
import pytest

ROOT: Final = Path(__file__).resolve().parents[2]
PAGES: Final = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNNABLE: Final = {"python", "py", "sh", "bash", "shell", "console"}
NOT_RUN: Final = 20
"""Blocks marked `<!-- not-run: ... -->` across README.md and docs/."""
GENERATED: Final = {ROOT / "docs/reference/cli.md"}
"""Generated pages whose indented lines are usage synopses, not commands to run."""
_MARK: Final = re.compile(r"^<!-- not-run: (?P<why>\S.{8,}\S) -->$")
_FENCE: Final = re.compile(r"^```(?P<lang>[a-z]*)\s*$")
_INDENTED_COMMAND: Final = re.compile(
    r"^    (\$ |apexmem |pip |curl |export |python |ollama |printf |openssl |jq |valgrind )"
)


class Block(msgspec.Struct, frozen=True, kw_only=True):
    """One fenced block of a page: where it starts, its language, its text, why it is not run."""

    line: int
    lang: str
    code: str
    not_run: str | None


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page in order, each with the not-run reason written before it."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        mark = _MARK.match(before)
        found.append(
            Block(
                line=i + 1,
                lang=opening["lang"],
                code="\n".join(lines[i + 1 : end]) + "\n",
                not_run=mark["why"] if mark else None,
            )
        )
        i = end + 1
    return found


def _console(code: str) -> str:
    """The commands of a console block: its `$ ` lines (the rest is their output)."""
    return "\n".join(line[2:] for line in code.splitlines() if line.startswith("$ ")) + "\n"


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("APEXMEM_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["APEXMEM_HOME"] = str(home / ".apexmem")
    env["APEXMEM_CACHE"] = str(home / ".cache")
    return env


def _run_shell(block: Block, where: str, env: dict[str, str], cwd: Path) -> None:
    code = _console(block.code) if block.lang == "console" else block.code
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code],
        check=False,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{where} failed ({done.returncode}):\n{code}\n{done.stderr}"


def _pages_with_blocks() -> list[Path]:
    return [p for p in PAGES if any(b.lang in RUNNABLE and not b.not_run for b in blocks(p))]


@pytest.mark.slow
@pytest.mark.parametrize(
    "page", _pages_with_blocks(), ids=[str(p.relative_to(ROOT)) for p in _pages_with_blocks()]
)
def test_the_code_blocks_of_a_page_run_in_order(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _environment(tmp_path)
    for key in [k for k in os.environ if k.startswith("APEXMEM_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("APEXMEM_HOME", env["APEXMEM_HOME"])
    monkeypatch.setenv("APEXMEM_CACHE", env["APEXMEM_CACHE"])
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    ran = 0

    for block in blocks(page):
        if block.lang not in RUNNABLE or block.not_run:
            continue
        where = f"{page.relative_to(ROOT)}:{block.line}"
        if block.lang in {"python", "py"}:
            exec(compile(block.code, where, "exec"), namespace)
        else:
            _run_shell(block, where, env, tmp_path)
        ran += 1

    assert ran > 0


def test_every_block_left_unrun_is_marked_with_a_reason_and_counted() -> None:
    marked = [(p, b) for p in PAGES for b in blocks(p) if b.not_run]

    unrunnable = [f"{p.relative_to(ROOT)}:{b.line}" for p, b in marked if b.lang not in RUNNABLE]

    assert unrunnable == [], "a not-run mark belongs only before a python or shell block"
    assert len(marked) == NOT_RUN, (
        f"{len(marked)} blocks are marked not-run, NOT_RUN says {NOT_RUN}: "
        "change NOT_RUN only with a reason in each mark"
    )


def test_no_command_hides_in_an_indented_block() -> None:
    hidden = []
    for page in set(PAGES) - GENERATED:
        inside = False
        previous = ""
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                inside = not inside
            elif not inside and not previous.strip() and _INDENTED_COMMAND.match(line):
                hidden.append(f"{page.relative_to(ROOT)}:{number}")
            previous = line

    assert sorted(hidden) == [], "fence shell commands as ```sh so they run (or are marked)"
