"""One write path: only the pipeline (`apexmem.service.pipeline`) appends to the log or takes
its write lock, and every kind of write goes through it.

Checked by a static walk of every module above `events/` (the log itself), and by running
each kind of write on a memory whose pipeline counts what it runs.
"""

from __future__ import annotations

import ast
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import pytest

from apexmem import HashingEmbedder, Memory, parse_settings
from apexmem.events.policy import FactsRetrieved
from apexmem.service.pipeline import Pipeline, Versions

ROOT: Final = Path(__file__).resolve().parents[2]
FOLDERS: Final = ("api", "service", "replay", "readmodels", "projections", "domain")
PIPELINE: Final = ROOT / "service" / "pipeline.py"
WRITES: Final = frozenset({"append", "locked", "append_batch"})
"""Log methods that write or take the write lock."""


def _log_writes(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Calls of a write method on something named like a log (`log`, `self._log`,
    `locked`, `memory.log`...)."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in WRITES:
            continue
        receiver = ast.unparse(node.func.value)
        name = receiver.rsplit(".", 1)[-1].lstrip("_")
        if name in {"log", "locked"} or name.endswith("_log"):
            yield node.lineno, f"{receiver}.{node.func.attr}(...)"


def test_no_module_but_the_pipeline_appends_to_the_log_or_takes_its_write_lock() -> None:
    modules = [p for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]

    found = [
        f"{path.relative_to(ROOT)}:{line} {call}"
        for path in modules
        if path != PIPELINE
        for line, call in _log_writes(ast.parse(path.read_text(encoding="utf-8")))
    ]

    assert len(modules) > 50, f"the walk found only {len(modules)} modules; is ROOT right?"
    assert list(_log_writes(ast.parse(PIPELINE.read_text(encoding="utf-8")))), "checker is blind"
    assert not found, "appends outside the write pipeline:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        "self.log.append([event])\n",
        "with self._log.locked() as locked:\n    locked.append(events)\n",
        "memory.log.append(events, idempotency_key='k')\n",
        "first_log.append([])\n",
    ],
)
def test_the_checker_finds_an_append_outside_the_pipeline(source: str) -> None:
    assert list(_log_writes(ast.parse(source)))


def test_a_list_append_is_not_a_log_append() -> None:
    assert not list(_log_writes(ast.parse("events.append(x)\nself._usage.append(e)\n")))


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    settings, _ = parse_settings("[memory.graph.note_linking]\nenabled = true\n")
    ticks = iter(range(10_000))

    def clock() -> datetime:
        return datetime(2025, 1, 1, tzinfo=UTC).replace(microsecond=next(ticks))

    with Memory.open(
        tmp_path / "mem", settings=settings, clock=clock, embedder=HashingEmbedder()
    ) as memory:
        yield memory


def _counting(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    kinds: list[str] = []
    pipeline: Pipeline = memory._pipeline
    run = pipeline.run

    def counted(kind: str, prepare: Callable[[int], Any]) -> Any:
        kinds.append(kind)
        return run(kind, prepare)

    monkeypatch.setattr(pipeline, "run", counted)
    return kinds


def test_every_kind_of_write_runs_through_the_pipeline(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    kinds = _counting(memory, monkeypatch)
    before = memory.log.last_position()

    memory.assert_fact(subject="Alice", relation="works_at", object="Acme")
    memory.record_message(episode="c1", speaker="Alice", text="Bob Stone works at Globex.")
    memory.recall("Alice")
    memory.backfill()
    memory.detect_communities()
    memory.assign_communities()
    memory.evict()
    memory.decay_usage(force=True)
    memory.link_notes()

    assert memory.log.last_position() > before
    assert {"commands", "note-linking", "usage-decay", "backfill", "detect"} <= set(kinds)
    assert {"assign", "evict"} <= set(kinds)


def test_recall_usage_rides_along_in_the_next_write(memory: Memory) -> None:
    memory.assert_fact(subject="Alice", relation="works_at", object="Acme")
    memory.recall("Alice")  # held: usage_batch recalls are written together

    ref = memory.assert_fact(subject="Alice", relation="uses", object="Rust")

    first, *rest = memory.events(start=ref.position)
    same = [e.tag for e in rest if e.recorded_at == first.recorded_at]  # the same append
    assert first.tag == "fact-asserted.v1"
    assert "facts-retrieved.v1" in same


def test_versions_count_on_from_what_was_read_and_start_new_streams_at_one() -> None:
    read, new = uuid.uuid4(), uuid.uuid4()
    numbered = Versions({read: 3}, actor="agent")
    data = FactsRetrieved(fact_ids=[])

    events = [numbered.event(read, data), numbered.event(new, data), numbered.event(read, data)]

    assert [(e.stream_id, e.version) for e in events] == [(read, 4), (new, 1), (read, 5)]
    assert {e.actor for e in events} == {"agent"}


def test_an_operation_with_nothing_to_append_takes_no_write_lock(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.assert_fact(subject="Alice", relation="works_at", object="Acme")
    memory.link_notes()
    locks: list[int] = []
    locked = memory.log.locked

    def counted() -> Any:
        locks.append(1)
        return locked()

    monkeypatch.setattr(memory.log, "locked", counted)

    again = memory.link_notes()  # nothing first seen since the last pass
    memory.assign_communities()  # nobody to place

    assert (again.entities, again.links) == (0, 0)
    assert locks == []
