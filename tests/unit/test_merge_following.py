"""Following merges forward (domain.merges): chains, cycles and the bound."""

from __future__ import annotations

from apexmem.domain.merges import MAX_MERGE_HOPS, followed, merge_roots


def test_an_id_with_no_successor_resolves_to_itself() -> None:
    assert followed("a", dict[str, str]().get) == "a"


def test_a_chain_resolves_to_its_last_id() -> None:
    into = {"a": "b", "b": "c"}

    assert followed("a", into.get) == "c"
    assert followed("b", into.get) == "c"


def test_a_cycle_stops_at_the_first_id_met_twice() -> None:
    into = {"a": "b", "b": "c", "c": "b"}

    assert followed("a", into.get) == "b"
    assert followed("c", into.get) == "c"


def test_an_id_merged_into_itself_resolves_to_itself() -> None:
    assert followed("a", {"a": "a"}.get) == "a"


def test_a_chain_longer_than_the_bound_stops_bound_hops_from_the_start() -> None:
    into = {i: i + 1 for i in range(MAX_MERGE_HOPS + 5)}

    assert followed(0, into.get) == MAX_MERGE_HOPS
    assert followed(0, into.get, bound=3) == 3
    assert followed(MAX_MERGE_HOPS, into.get) == MAX_MERGE_HOPS + 5


def test_a_chain_as_long_as_the_bound_is_followed_to_its_end() -> None:
    into = {i: i + 1 for i in range(MAX_MERGE_HOPS)}

    assert followed(0, into.get) == MAX_MERGE_HOPS


def test_merge_roots_resolves_each_id_once_in_order() -> None:
    into = {"a": "b", "b": "c", "x": "c"}

    assert list(merge_roots(into, ["x", "a", "z"]).items()) == [
        ("x", "c"),
        ("a", "c"),
        ("z", "z"),
    ]
