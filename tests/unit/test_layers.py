"""The layer order holds: every import between apexmem layers points down.

apexmem (api/) -> service -> replay -> readmodels -> projections -> domain -> events, checked by a
static walk of every module's imports with ast (lazy and TYPE_CHECKING imports included).
"""

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Final

import pytest

from apexmem.events.catalogue import EVENT_CLASSES

ROOT = Path(__file__).resolve().parents[2]

LAYERS: Final = (
    "events",
    "domain",
    "projections",
    "readmodels",
    "replay",
    "service",
    "apexmem",
)
"""Lowest first; a module may import its own layer or a lower one."""
RANK: Final = {layer: rank for rank, layer in enumerate(LAYERS)}
SUBPACKAGES: Final = frozenset(LAYERS[:-1])
ORDER: Final = " -> ".join(reversed(LAYERS))
FOLDERS: Final = {
    "api": "apexmem",
    "domain": "apexmem.domain",
    "events": "apexmem.events",
    "projections": "apexmem.projections",
    "readmodels": "apexmem.readmodels",
    "replay": "apexmem.replay",
    "service": "apexmem.service",
}

# What domain may take from events: the vocabulary, never the log and its machinery.
# timeutil holds UtcDateTime, the type event fields use, and pure conversions.
DOMAIN_MAY_IMPORT: Final = frozenset(
    {
        "apexmem.events.base",
        "apexmem.events.catalogue",
        "apexmem.events.errors",
        "apexmem.events.timeutil",
        # What a fact's or message's id is: the stream and version that recorded it.
        "apexmem.events.located",
    }
    | {cls.__module__ for cls in EVENT_CLASSES.values()}
)


def layer_of(module: str) -> str | None:
    """The layer of an apexmem module; everything not in a subpackage is the api layer."""
    parts = module.split(".")
    if parts[0] != "apexmem":
        return None
    if len(parts) > 1 and parts[1] in SUBPACKAGES:
        return parts[1]
    return "apexmem"


def _modules() -> Iterator[tuple[str, Path]]:
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((package, *parts)), path


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imports(module: str, is_package: bool, tree: ast.AST) -> Iterator[tuple[int, str, list[str]]]:
    """Every (line, imported module, imported names) in a module, lazy and TYPE_CHECKING too."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, is_package, node)
            yield node.lineno, target, [alias.name for alias in node.names]


@cache
def _events_reexports() -> dict[str, str]:
    """Name re-exported by apexmem.events -> the events module that defines it."""
    tree = ast.parse((ROOT / "events" / "__init__.py").read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def _events_modules_reached(target: str, names: list[str]) -> list[str]:
    if target != "apexmem.events":
        return [target]
    # `from apexmem.events import X`: X comes from the module the package re-exports it from.
    reexports = _events_reexports()
    return [reexports.get(name, f"apexmem.events.{name}") for name in names]


def violations(module: str, source: str, *, is_package: bool = False) -> list[str]:
    """Every import in `source` (the text of `module`) that breaks the layer rules."""
    layer = layer_of(module)
    assert layer is not None, f"{module} is not an apexmem module"
    found: list[str] = []
    for line, target, names in _imports(module, is_package, ast.parse(source)):
        target_layer = layer_of(target)
        if target_layer is None:
            continue
        if RANK[target_layer] > RANK[layer]:
            found.append(
                f"{module}:{line} ({layer}) imports {target} ({target_layer}), against {ORDER}"
            )
        if layer == "domain" and target_layer == "events":
            found.extend(
                f"{module}:{line} (domain) imports {reached}: domain takes only event classes, "
                "errors, base and timeutil from events, never the log, codec, chain or storage"
                for reached in _events_modules_reached(target, names)
                if reached not in DOMAIN_MAY_IMPORT
            )
    return found


def test_every_module_imports_only_its_own_layer_or_lower_ones() -> None:
    modules = list(_modules())

    found = [
        problem
        for module, path in modules
        for problem in violations(
            module, path.read_text(encoding="utf-8"), is_package=path.name == "__init__.py"
        )
    ]

    assert len(modules) > 20, f"the walk found only {len(modules)} modules; is ROOT right?"
    assert not found, "layer violations:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("apexmem", "apexmem"),
        ("apexmem.memory", "apexmem"),
        ("apexmem.cli.main", "apexmem"),
        ("apexmem.replay.audit", "replay"),
        ("apexmem.service.writer", "service"),
        ("apexmem.events", "events"),
        ("eventsourcing.sqlite", None),
    ],
)
def test_modules_outside_the_six_subpackages_are_the_api_layer(
    module: str, layer: str | None
) -> None:
    assert layer_of(module) == layer


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("apexmem.domain.bad", "from apexmem.replay.audit import history_of\n"),
        ("apexmem.events.bad", "import apexmem.domain.names\n"),
        ("apexmem.projections.bad", "def f() -> None:\n    import apexmem.readmodels\n"),
        ("apexmem.replay.bad", "from apexmem import Memory\n"),
        ("apexmem.replay.bad", "from apexmem.service.writer import Writer\n"),
        ("apexmem.service.bad", "from apexmem.memory import Memory\n"),
        ("apexmem.readmodels.bad", "from ..replay import verify\n"),
        ("apexmem.domain.bad", "from apexmem.events.log import EventLog\n"),
        ("apexmem.domain.bad", "from apexmem.events import EventLog\n"),
        ("apexmem.domain.bad", "from apexmem.events import codec\n"),
        ("apexmem.domain.bad", "from ..events.chain import link\n"),
    ],
)
def test_the_checker_catches_a_bad_import(module: str, source: str) -> None:
    found = violations(module, source)

    assert len(found) == 1, found


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("apexmem.domain.good", "from apexmem.events.fact import FactAsserted\n"),
        ("apexmem.domain.good", "from apexmem.events import FactAsserted, ValidationError\n"),
        ("apexmem.domain.good", "from apexmem.domain.names import canonical_name\n"),
        ("apexmem.replay.good", "from apexmem.events.log import EventLog\n"),
        ("apexmem.cli.main", "from apexmem import Memory\nfrom . import render\n"),
        ("apexmem.events.good", "import msgspec\nfrom .base import Event\n"),
    ],
)
def test_the_checker_accepts_imports_that_point_down(module: str, source: str) -> None:
    found = violations(module, source)

    assert found == []
