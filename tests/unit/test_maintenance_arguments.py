"""The maintenance calls' arguments and settings: each one a caller can get wrong is refused
with a ValidationError naming it, before anything is written, and each form one entry
point takes (ISO 8601 text for a time, an edge type's alias) every other takes too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from apexmem import Memory, Settings, ValidationError, parse_settings
from apexmem.cli import cli
from apexmem.domain.embedding import HashingEmbedder
from apexmem.service.arguments import MAX_COUNT

CENTURY_SECS = 36_500 * 86_400
"""The longest decay interval the settings take, as the README documents it."""
INTERVAL_KEY = "memory.graph.note_linking.link_weight_decay_interval_secs"
NOT_COUNTS: dict[str, Any] = {
    "negative": -1,
    "text": "3",
    "a fraction": 2.5,
    "nan": float("nan"),
    "a bool": True,
}


def test_decay_rates_take_a_known_at_time_as_iso_text(memory: Memory) -> None:
    memory.set_decay_rate("temporal", 0.02)
    between = memory.log.last_recorded_at()
    memory.set_decay_rate("temporal", 0.05)
    assert between is not None

    as_text = memory.decay_rates(known_at=between.isoformat().replace("+00:00", "Z"))

    assert as_text == memory.decay_rates(known_at=between)
    assert as_text["temporal"] == 0.02


@pytest.mark.parametrize("known_at", ["yesterday", 20200101])
def test_decay_rates_refuse_a_known_at_that_is_not_a_time(memory: Memory, known_at: Any) -> None:
    with pytest.raises(ValidationError) as refused:
        memory.decay_rates(known_at=known_at)

    assert refused.value.field == "known_at"


@pytest.mark.parametrize("seconds", [CENTURY_SECS + 1, 100_000_000_000, 2**63 - 1])
def test_a_decay_interval_over_a_century_is_refused_at_load_naming_its_key(seconds: int) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_settings(f"[memory.graph.note_linking]\nlink_weight_decay_interval_secs = {seconds}")

    assert (refused.value.field, refused.value.value) == (INTERVAL_KEY, seconds)


def test_a_decay_interval_of_a_century_runs_a_pass(tmp_path: Path) -> None:
    settings, _ = parse_settings(
        f"[memory.graph.note_linking]\nlink_weight_decay_interval_secs = {CENTURY_SECS}"
    )

    with Memory.open(tmp_path / "mem", settings=settings, embedder=HashingEmbedder()) as memory:
        done = memory.decay_usage()

    assert done.ran and done.cutoff < done.next_due


@pytest.mark.parametrize("seconds", [100_000_000_000, 9e18, 0])
def test_a_decay_interval_out_of_bounds_in_settings_built_in_python_is_refused_by_a_pass(
    tmp_path: Path, seconds: Any
) -> None:
    defaults = Settings()
    linking = msgspec.structs.replace(
        defaults.memory.graph.note_linking, link_weight_decay_interval_secs=seconds
    )
    graph = msgspec.structs.replace(defaults.memory.graph, note_linking=linking)
    settings = msgspec.structs.replace(
        defaults, memory=msgspec.structs.replace(defaults.memory, graph=graph)
    )

    with Memory.open(tmp_path / "mem", settings=settings, embedder=HashingEmbedder()) as memory:
        with pytest.raises(ValidationError) as refused:
            memory.decay_usage()
        written = list(memory.events(tags=["retrieval-counts-decayed.v1"]))

    assert refused.value.field == INTERVAL_KEY
    assert written == []


@pytest.mark.parametrize("limit", NOT_COUNTS.values(), ids=list(NOT_COUNTS))
def test_backfill_refuses_a_limit_that_is_not_a_count(memory: Memory, limit: Any) -> None:
    memory.record_message(episode="conv-1", speaker="Caroline", text="I met Bob Stone")
    before = memory.log.last_position()

    with pytest.raises(ValidationError) as refused:
        memory.backfill(limit=limit)

    assert refused.value.field == "limit"
    assert memory.log.last_position() == before


@pytest.mark.parametrize("field", ["limit", "top"])
@pytest.mark.parametrize("value", NOT_COUNTS.values(), ids=list(NOT_COUNTS))
def test_communities_refuse_a_limit_or_top_that_is_not_a_count(
    memory: Memory, field: str, value: Any
) -> None:
    with pytest.raises(ValidationError) as refused:
        memory.communities(**{field: value})

    assert refused.value.field == field


def test_communities_with_a_limit_or_top_of_zero_list_none_or_show_no_members(
    memory: Memory,
) -> None:
    memory.assert_facts(
        [
            {"subject": "Alice", "relation": "knows", "object": "Bob"},
            {"subject": "Bob", "relation": "knows", "object": "Carol"},
        ]
    )
    memory.detect_communities()

    none = memory.communities(limit=0)
    [bare] = memory.communities(top=0)
    [every] = memory.communities(limit=MAX_COUNT, top=MAX_COUNT)

    assert none == []
    assert (bare.size, bare.top_members) == (3, [])
    assert len(every.top_members) == 3


@pytest.mark.parametrize(
    ("alias", "edge_type"), [("hierarchical", "entity"), ("co_occurrence", "semantic")]
)
def test_apexmem_decay_rate_takes_the_edge_type_aliases_the_api_takes(
    tmp_path: Path, alias: str, edge_type: str
) -> None:
    (tmp_path / "mem").mkdir()
    (tmp_path / "mem" / "apexmem.toml").write_text('[memory.vectors]\nembedder = "hashing"\n')

    result = CliRunner().invoke(
        cli,
        [
            "--db",
            str(tmp_path / "mem"),
            "--json",
            "decay-rate",
            "--edge-type",
            alias,
            "--rate",
            "0.5",
        ],
    )

    assert result.exit_code == 0, result.output
    assert json.loads(result.output)[edge_type] == 0.5


def test_apexmem_decay_rate_still_refuses_an_unknown_edge_type(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path), "decay-rate", "--edge-type", "bogus", "--rate", "0.5"]
    )

    assert result.exit_code == 2
    assert "--edge-type" in result.output
