"""The generated event catalogue reference stays in step with the event union."""

from pathlib import Path

import pytest

from apexmem.events.reference import DEFAULT_PATH, REGENERATE, main, render_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_the_event_reference_matches_the_catalogue() -> None:
    path = ROOT / DEFAULT_PATH

    current = path.read_text(encoding="utf-8") if path.is_file() else None

    assert current == render_markdown(), (
        f"{DEFAULT_PATH} is stale or missing; regenerate it from the repository root with:\n"
        f"    {REGENERATE}"
    )


def test_rendering_the_reference_twice_gives_the_same_text() -> None:
    first = render_markdown()

    second = render_markdown()

    assert first == second


def test_check_exits_1_and_names_the_command_when_the_file_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "events.md"
    stale.write_text(render_markdown() + "edited by hand\n", encoding="utf-8")

    code = main(["--check", str(stale)])

    assert code == 1
    assert REGENERATE in capsys.readouterr().err


def test_check_exits_0_when_the_file_is_current(tmp_path: Path) -> None:
    current = tmp_path / "events.md"
    current.write_text(render_markdown(), encoding="utf-8")

    code = main(["--check", str(current)])

    assert code == 0
