"""Following merges on random successor maps: the walk ends where its rule says, and on
maps without cycles it is plain stepping to the end."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from apexmem.domain.merges import followed

ids = st.integers(min_value=0, max_value=12)
maps = st.dictionaries(ids, ids, max_size=13)
bounds = st.integers(min_value=0, max_value=15)


def walk(start: int, into: dict[int, int], hops: int) -> list[int]:
    path = [start]
    while len(path) <= hops and path[-1] in into:
        path.append(into[path[-1]])
    return path


@given(maps, ids, bounds)
def test_the_walk_ends_without_a_successor_where_a_cycle_closes_or_at_the_bound(
    into: dict[int, int], start: int, bound: int
) -> None:
    end = followed(start, into.get, bound=bound)

    path = walk(start, into, bound)
    first_repeat = next((i for i, e in enumerate(path) if e in path[:i]), None)
    assert end == path[-1 if first_repeat is None else first_repeat]
    assert end not in into or first_repeat is not None or len(path) == bound + 1


# 13 ids make chains far shorter than the bound: every walk here ends by its own rule.
@given(maps, ids)
def test_following_again_from_the_end_stays_there_when_the_bound_was_not_reached(
    into: dict[int, int], start: int
) -> None:
    end = followed(start, into.get)

    assert followed(end, into.get) == end


@given(st.permutations(list(range(13))), maps, ids)
def test_on_maps_without_cycles_following_is_stepping_to_the_end(
    order: list[int], candidates: dict[int, int], start: int
) -> None:
    rank = {e: i for i, e in enumerate(order)}
    into = {a: b for a, b in candidates.items() if rank[a] < rank[b]}  # every step goes up

    end = start
    while end in into:
        end = into[end]
    assert followed(start, into.get) == end
