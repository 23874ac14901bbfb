"""pyproject.toml lists every package, so setuptools drops no folder from the wheel."""

import os
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SKIPPED_DIRS = {"build", "dist", "node_modules", "venv", "__pycache__"}


def _setuptools() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        config: dict[str, Any] = tomllib.load(file)["tool"]["setuptools"]
    return config


def _package_dirs() -> dict[str, str]:
    mapping: dict[str, str] = _setuptools().get("package-dir", {})
    return mapping


def _listed_packages() -> set[str]:
    return set(_setuptools()["packages"])


def _walk(root: Path) -> Iterator[tuple[PurePosixPath, list[str]]]:
    """Every folder under `root` (relative, posix) with its file names, minus build output."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(
            name
            for name in dirs
            if not name.startswith(".") and name not in SKIPPED_DIRS and ".egg-info" not in name
        )
        yield PurePosixPath(Path(folder).relative_to(root).as_posix()), files


def _package_of(folder: PurePosixPath, mapping: Mapping[str, str]) -> str | None:
    """The package setuptools would build from `folder`, or None when no mapping covers it."""
    covering: list[tuple[int, str, tuple[str, ...]]] = []
    for package, source in mapping.items():
        base = PurePosixPath(source).parts
        if folder.parts[: len(base)] == base:
            covering.append((len(base), package, folder.parts[len(base) :]))
    if not covering:
        return None
    _, package, rest = max(covering)
    return ".".join(part for part in (package, *rest) if part)


def _folder_of(package: str, mapping: Mapping[str, str]) -> PurePosixPath:
    """Where setuptools looks for `package`: its own mapping, else its nearest parent's."""
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        prefix = ".".join(parts[:cut])
        if prefix in mapping:
            return PurePosixPath(mapping[prefix], *parts[cut:])
    return PurePosixPath(mapping.get("", "."), *parts)


def test_the_package_mapping_names_nested_folders_through_their_parent() -> None:
    mapping = {"apexmem": "api", "apexmem.domain": "domain"}

    assert _package_of(PurePosixPath("api/cli"), mapping) == "apexmem.cli"
    assert _package_of(PurePosixPath("domain"), mapping) == "apexmem.domain"
    assert _package_of(PurePosixPath("bench"), mapping) is None
    assert _folder_of("apexmem.cli.render", mapping) == PurePosixPath("api/cli/render")


def test_every_folder_with_an_init_is_a_listed_package() -> None:
    mapping, listed = _package_dirs(), _listed_packages()
    problems: list[str] = []

    for folder, files in _walk(ROOT):
        if "__init__.py" not in files:
            continue
        package = _package_of(folder, mapping)
        if package is None:
            problems.append(f"{folder}/ has an __init__.py but no [tool.setuptools.package-dir]")
        elif package not in listed:
            problems.append(f"{package} ({folder}/) is missing from [tool.setuptools] packages")

    assert not problems, "setuptools would leave these out of the wheel:\n" + "\n".join(problems)


def test_every_listed_package_has_a_folder_with_an_init() -> None:
    mapping = _package_dirs()

    missing = sorted(
        f"{package} -> {_folder_of(package, mapping)}/__init__.py"
        for package in _listed_packages()
        if not (ROOT / _folder_of(package, mapping) / "__init__.py").is_file()
    )

    assert not missing, "listed packages without an __init__.py:\n" + "\n".join(missing)


def test_every_folder_of_modules_inside_a_package_has_an_init() -> None:
    mapping = _package_dirs()
    sources = [PurePosixPath(source) for source in mapping.values() if source not in ("", ".")]

    namespace = sorted(
        str(folder)
        for folder, files in _walk(ROOT)
        if any(folder == source or source in folder.parents for source in sources)
        and any(name.endswith(".py") for name in files)
        and "__init__.py" not in files
    )

    assert not namespace, f"folders of modules without an __init__.py (dropped): {namespace}"


def test_no_top_level_apexmem_folder_shadows_the_installed_package() -> None:
    shadow = ROOT / "apexmem"

    exists = shadow.exists()

    assert not exists, f"{shadow} would shadow the installed apexmem package; remove it"
