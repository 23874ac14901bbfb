"""`apexmem link-notes` run by real processes at once: each exits 0, the pass that records
second finds the work done, and the log holds every link once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Final

from apexmem import Memory, ObserveEntity
from apexmem.events.fact import FactAsserted
from apexmem.events.similarity import NotesLinked
from apexmem.readmodels import dump
from apexmem.service.linking import SIMILAR_TO

SETTINGS: Final = (
    '[memory.vectors]\nembedder = "hashing"\n'
    "[memory.graph.note_linking]\nsimilarity_threshold = 0.5\n"
)
RACER: Final = """
import sys, time
from pathlib import Path
from apexmem.cli import main
directory = sys.argv[1]
print("ready", flush=True)
while not (Path(directory) / "go").exists():  # a start line, so the passes really overlap
    time.sleep(0.001)
sys.argv = ["apexmem", "--db", directory, "link-notes"]
main()
"""
DISHES: Final = ("apple pie", "apple tart", "cherry pie", "pear tart", "plum cake")


def _start(directory: Path) -> subprocess.Popen[str]:
    racer = subprocess.Popen(
        [sys.executable, "-c", RACER, str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert racer.stdout is not None
    assert racer.stdout.readline().strip() == "ready"
    return racer


def test_link_notes_passes_racing_in_processes_all_succeed_and_link_each_pair_once(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "mem"
    directory.mkdir()
    (directory / "apexmem.toml").write_text(SETTINGS)
    names = [f"{dish} {n}" for dish in DISHES for n in range(40)]
    with Memory.open(directory) as memory:
        memory.execute([ObserveEntity(name=name, entity_type="dish") for name in names])
    racers = [_start(directory) for _ in range(3)]
    (directory / "go").touch()

    outputs = [r.communicate(timeout=120) for r in racers]

    assert [r.returncode for r in racers] == [0, 0, 0], [err for _, err in outputs]
    with Memory.open(directory) as memory:
        marks = [e.data for e in memory.events(tags=["notes-linked.v1"])]
        asserted = [e.data for e in memory.events(tags=["fact-asserted.v1"])]
        reinforced = list(memory.events(tags=["fact-reinforced.v1"]))
        report = memory.verify()
        with memory.store.read() as connection:
            incremental = dump(connection)
        memory.rebuild()
        with memory.store.read() as connection:
            rebuilt = dump(connection)
    pairs = [(f.subject_id, f.object_id) for f in asserted if isinstance(f, FactAsserted)]
    linked = [m.entities for m in marks if isinstance(m, NotesLinked)]
    assert sum(linked) == len(names)  # each entity looked at by one recorded pass
    assert pairs and len(set(pairs)) == len(pairs)
    assert all(f.relation == SIMILAR_TO for f in asserted if isinstance(f, FactAsserted))
    assert reinforced == []
    assert report.ok
    assert rebuilt == incremental
