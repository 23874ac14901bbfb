"""A damaged file: the log's is reported, never read past; the read models' is set aside and
rebuilt from the log (they are derived from it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from apexmem import HashingEmbedder, IntegrityViolation, Memory

PAGE = 4096


def written(tmp_path: Path) -> Path:
    directory = tmp_path / "mem"
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        memory.assert_facts(
            [
                {"subject": f"person {i:03d}", "relation": "knows", "object": "Alice"}
                for i in range(200)
            ]
        )
    return directory  # closed: the WAL is checkpointed into the files


def test_damaged_read_models_are_set_aside_and_rebuilt_from_the_log(tmp_path: Path) -> None:
    directory = written(tmp_path)
    (directory / "readmodels.db").write_bytes(b"garbage" * 100)

    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        assert memory.store.set_aside is not None
        kept, error = memory.store.set_aside
        assert len(memory.facts_about("Alice")) == 200
        assert memory.verify().ok

    assert "not a database" in error
    assert kept.read_bytes() == b"garbage" * 100
    assert kept.name.startswith("readmodels.db.damaged-")


def test_a_log_that_is_not_a_database_is_refused_by_name(tmp_path: Path) -> None:
    directory = written(tmp_path)
    log = directory / "events.db"
    damaged = bytearray(log.read_bytes())
    damaged[:16] = b"not a sqlite db!"
    log.write_bytes(bytes(damaged))

    with pytest.raises(IntegrityViolation) as caught:
        Memory.open(directory, embedder=HashingEmbedder())

    assert str(log) in str(caught.value) and "damaged" in str(caught.value)
    assert log.read_bytes() == bytes(damaged)  # nothing written, nothing moved


def test_verify_reports_a_log_sqlite_cannot_read_on(tmp_path: Path) -> None:
    directory = written(tmp_path)
    log = directory / "events.db"
    damaged = bytearray(log.read_bytes())
    for start in range(PAGE, len(damaged), PAGE):  # every page's header after the schema's
        damaged[start : start + 8] = b"\xff" * 8
    log.write_bytes(bytes(damaged))

    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        report = memory.verify()

    assert not report.ok
    assert report.first_bad_position == report.events_checked + 1
    assert report.reason is not None and "damaged" in report.reason
