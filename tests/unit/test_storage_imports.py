"""Below the composition root, code knows the log only by its contract (`events.ports`).

`domain/`, `projections/`, `readmodels/`, `replay/` and `service/` import the envelope and the
protocols, never a log implementation, so a new backend plugs in at `api/memory.py` alone.
"""

import ast
from pathlib import Path
from typing import Final

ROOT = Path(__file__).resolve().parents[2]
FOLDERS: Final = ("domain", "projections", "readmodels", "replay", "service")
IMPLEMENTATIONS: Final = frozenset(
    {"apexmem.events.log", "apexmem.events.logreads", "apexmem.events.memory_log"}
)
NAMES: Final = frozenset({"EventLog", "InMemoryLog", "LockedEventLog", "LockedInMemoryLog"})


def implementation_imports(source: str) -> list[str]:
    """Every import in `source` that names a log implementation (module or class)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name in IMPLEMENTATIONS]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = {a.name for a in node.names}
            if node.module in IMPLEMENTATIONS or (
                node.module == "apexmem.events" and names & (NAMES | {"log", "memory_log"})
            ):
                found.append(f"{node.module}: {sorted(names)}")
    return found


def test_no_layer_below_the_api_imports_a_log_implementation() -> None:
    paths = [p for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]

    found = {
        str(p.relative_to(ROOT)): hits
        for p in paths
        if (hits := implementation_imports(p.read_text(encoding="utf-8")))
    }

    assert len(paths) > 20
    assert found == {}


def test_the_check_catches_an_import_of_the_sqlite_log() -> None:
    sources = [
        "from apexmem.events.log import EventLog\n",
        "from apexmem.events import EventLog, NewEvent\n",
        "import apexmem.events.memory_log\n",
    ]

    found = [implementation_imports(s) for s in sources]

    assert all(len(hits) == 1 for hits in found), found
    assert implementation_imports("from apexmem.events.ports import Log\n") == []
