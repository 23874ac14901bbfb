"""The fault-injection tests (kill -9, a full disk, tampering) run in CI, none left out."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
FAULT_TESTS: Final = (
    "tests/integration/test_concurrent_writers.py",
    "tests/integration/test_log_checkpoints.py",
    "tests/integration/test_pg_writers.py",
    "tests/integration/test_projection_crash.py",
    "tests/integration/test_projection_leadership.py",
    "tests/integration/test_disk_full.py",
    "tests/integration/test_disk_full_cli.py",
    "tests/integration/test_cli_tampering.py",
    "tests/integration/test_cli_damaged_log.py",
    "tests/integration/test_cli_restored_log.py",
    "tests/property/test_idempotency_and_tamper.py",
    "tests/unit/test_verify_keys.py",
)
"""The files the README's Reliability table names for crashes, full disks and tampering."""
LEAVE_OUT: Final = re.compile(r"(^|\s)(-m|-k|--deselect|--ignore\S*)(\s|=|$)")
"""pytest options that would run fewer tests than the suite holds."""


def test_ci_runs_the_whole_suite_with_no_option_that_leaves_tests_out() -> None:
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

    pytest_lines = [line for line in run.splitlines() if "pytest" in line and "#" not in line]
    addopts = settings["tool"]["pytest"]["ini_options"]["addopts"]

    assert pytest_lines == ["python -m pytest -q"]
    assert LEAVE_OUT.search(addopts) is None, addopts


def test_no_fault_injection_test_is_skipped_or_expected_to_fail() -> None:
    sources = {name: (ROOT / name).read_text(encoding="utf-8") for name in FAULT_TESTS}

    found = {
        name: hit.group(0)
        for name, text in sources.items()
        if (hit := re.search(r"skip\(|skipif|importorskip|xfail", text))
    }

    assert found == {}
