"""The bitemporal picture, for any versions: well-formed SVG, one bar per version, known time
down, valid time across, and stored text shown as text (never as markup)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from typing import Final
from uuid import UUID

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from apexmem.bitemporal import bar_kind, timeline_svg
from apexmem.readmodels.rows import FactRow

SVG: Final = "{http://www.w3.org/2000/svg}"
NOW: Final = datetime(2025, 1, 1, tzinfo=UTC)
_START: Final = datetime(1990, 1, 1, tzinfo=UTC)
_PRINTABLE: Final = st.characters(blacklist_categories=("Cc", "Cs"))


@st.composite
def versions(draw: st.DrawFn) -> list[FactRow]:
    count = draw(st.integers(min_value=0, max_value=6))
    rows = []
    for index in range(count):
        start = _START + timedelta(days=draw(st.integers(0, 12_000)))
        length = draw(st.none() | st.integers(1, 5_000))
        told = NOW - timedelta(days=draw(st.integers(0, 3_000)), microseconds=index)
        rows.append(
            FactRow(
                fact_id=UUID(int=index + 1),
                slot_id=UUID(int=999),
                subject_id=UUID(int=1000),
                subject="Alice",
                relation="works_at",
                object_id=None,
                object=draw(st.text(_PRINTABLE, min_size=1, max_size=12)),
                edge_type="semantic",
                fact="Alice works somewhere",
                confidence=1.0,
                standing=draw(st.sampled_from(["believed", "alternative", "withdrawn"])),
                valid_from=start,
                valid_until=None if length is None else start + timedelta(days=length),
                recorded_at=told,
                expired_at=None,
                asserted_at=told,
                observed_at=told,
                supersedes=None,
                superseded_by=None,
                ref=None,
                actor=None,
                episode=None,
                position=index + 1,
            )
        )
    return rows


@given(versions())
def test_the_picture_has_one_bar_per_version_known_time_down(rows: list[FactRow]) -> None:
    picture = timeline_svg(rows, title="Alice <works_at> & co", now=NOW)

    root = ET.fromstring(picture)
    bars = [g for g in root.iter(f"{SVG}g") if "version" in (g.get("class") or "")]
    assert len(bars) == len(rows)
    order = sorted(rows, key=lambda r: (r.asserted_at, r.position))
    assert [UUID(b.get("data-fact-id")) for b in bars] == [r.fact_id for r in order]
    tops = [float(_rect(b).get("y", "0")) for b in bars]
    assert tops == sorted(tops)
    for bar, row in zip(bars, order, strict=True):
        assert bar.get("class") == f"version {bar_kind(row, NOW)}"
        assert [t.text for t in bar.findall(f"{SVG}text")][-1] == row.object
    assert root.find(f"{SVG}text") is not None
    assert root.find(f"{SVG}text").text == "Alice <works_at> & co"  # type: ignore[union-attr]


@given(versions())
def test_a_version_that_starts_later_in_valid_time_starts_further_right(
    rows: list[FactRow],
) -> None:
    root = ET.fromstring(timeline_svg(rows, title="t", now=NOW))

    starts = {
        UUID(g.get("data-fact-id")): float(_rect(g).get("x", "0"))
        for g in root.iter(f"{SVG}g")
        if g.get("data-fact-id")
    }
    for a in rows:
        for b in rows:
            if a.valid_from < b.valid_from:
                assert starts[a.fact_id] <= starts[b.fact_id]


def test_a_character_xml_cannot_hold_is_shown_as_a_replacement() -> None:
    row = _one(object="Acme\x1fCorp\x00")

    root = ET.fromstring(timeline_svg([row], title="t\x07", now=NOW))

    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert "Acme\ufffdCorp\ufffd" in labels
    assert "t\ufffd" in labels


def test_versions_at_the_ends_of_time_are_drawn() -> None:
    first = msgspec.structs.replace(
        _one(object="A"), valid_from=datetime.min.replace(tzinfo=UTC), valid_until=NOW
    )
    last = msgspec.structs.replace(
        _one(object="B"), fact_id=UUID(int=9), valid_from=NOW,
        valid_until=datetime.max.replace(tzinfo=UTC),
    )  # fmt: skip

    root = ET.fromstring(timeline_svg([first, last], title="t", now=NOW))

    assert len([g for g in root.iter(f"{SVG}g") if g.get("data-fact-id")]) == 2


def _one(*, object: str) -> FactRow:
    told = NOW - timedelta(days=1)
    return FactRow(
        fact_id=UUID(int=1), slot_id=UUID(int=2), subject_id=UUID(int=3), subject="Alice",
        relation="works_at", object_id=None, object=object, edge_type="semantic",
        fact="Alice works_at Acme", confidence=1.0, standing="believed",
        valid_from=NOW - timedelta(days=10), valid_until=None, recorded_at=told,
        expired_at=None, asserted_at=told, observed_at=told, supersedes=None,
        superseded_by=None, ref=None, actor=None, episode=None, position=1,
    )  # fmt: skip


def _rect(bar: ET.Element) -> ET.Element:
    found = bar.find(f"{SVG}rect")
    assert found is not None
    return found
