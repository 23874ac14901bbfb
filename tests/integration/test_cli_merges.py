"""`apexmem merges` and `apexmem link-notes` through click's runner, on a real memory
directory whose settings turn resolution by similarity on (real WordLlama)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from apexmem.cli import cli


def _entity(name: str) -> str:
    return json.dumps({"op": "entity", "name": name, "entity_type": "person"})


def test_merges_lists_similarity_merges_and_kept_apart_pairs_and_link_notes_reports(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "mem"
    directory.mkdir()
    (directory / "apexmem.toml").write_text("[memory.graph]\nuse_embedding_resolution = true\n")
    db = str(directory)
    runner = CliRunner()
    lines = "\n".join(_entity(n) for n in ("John Smith", "Mr John Smith", "Jon Smith")) + "\n"
    assert runner.invoke(cli, ["--db", db, "ingest", "-"], input=lines).exit_code == 0

    merged = runner.invoke(cli, ["--db", db, "--json", "merges"])
    both = runner.invoke(cli, ["--db", db, "--json", "merges", "--apart"])
    table = runner.invoke(cli, ["--db", db, "merges", "--apart"])
    linked = runner.invoke(cli, ["--db", db, "--json", "link-notes"])

    assert merged.exit_code == 0, merged.output
    [row] = json.loads(merged.output)
    assert (row["name"], row["target"], row["judge"]) == (
        "Mr John Smith",
        "John Smith",
        "threshold",
    )
    assert [r["verdict"] for r in json.loads(both.output)] == ["merged", "apart"]
    assert "apart" in table.output and "Jon Smith" in table.output
    assert linked.exit_code == 0, linked.output
    assert json.loads(linked.output)["entities"] == 3
