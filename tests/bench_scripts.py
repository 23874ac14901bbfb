"""Loading bench/ scripts in tests: bench/ is a folder of scripts, not a package."""

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load(name: str) -> ModuleType:
    """bench/`name`.py, loaded under the name `bench_<name>` (its imports of siblings by
    their own names need bench/ on the path, which only some scripts do)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """`python <args>` from the repository root, as a user runs the bench (at most `timeout`
    seconds, 5 minutes unless told)."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
