"""The vectors read model: the hashing embedder, the text-hash cache, FAISS against brute force,
the index file across reopen, and the exact -> HNSW switch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from apexmem import Memory, Settings, ValidationError, parse_settings
from apexmem.domain.embedding import Embedder, HashingEmbedder, Vectors
from apexmem.readmodels.vector_index import VectorIndex
from apexmem.readmodels.vectors import brute_force, last_vid, replaced_between

TOPICS = (
    "rust cargo crates compiler",
    "python pip wheels interpreter",
    "pizza pasta italian food",
    "football goal stadium match",
    "piano violin concert music",
    "mountain hiking trail summit",
    "stock market shares trading",
    "garden tomato seeds soil",
)


class CountingEmbedder:
    """A fake that embeds with the hashing embedder and remembers every text it was given."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.seen: list[str] = []

    @property
    def name(self) -> str:
        """The wrapped embedder's name: the cache cannot tell them apart."""
        return self.inner.name

    @property
    def dimension(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Count, then delegate."""
        self.seen.extend(texts)
        return self.inner.embed(texts)


def _open(
    path: Path,
    clock: Callable[[], datetime],
    embedder: Embedder,
    settings: Settings | None = None,
) -> Memory:
    return Memory.open(path, clock=clock, embedder=embedder, settings=settings)


def _fill(memory: Memory, count: int) -> None:
    facts = [
        {
            "subject": f"Person {i}",
            "relation": "likes",
            "value": f"thing {i}",
            "fact": f"Person {i} likes {TOPICS[i % len(TOPICS)]} number {i}",
        }
        for i in range(count)
    ]
    memory.assert_facts(facts)


def _settings(toml: str) -> Settings:
    settings, _ = parse_settings(toml)
    return settings


def test_the_hashing_embedder_is_deterministic_and_normalized() -> None:
    texts = ["Alice works at Acme", "", "alice WORKS at acme"]

    first = HashingEmbedder(64).embed(texts)
    second = HashingEmbedder(64).embed(texts)

    assert first.dtype == np.float32 and first.shape == (3, 64)
    assert np.array_equal(first, second)
    assert np.allclose(np.linalg.norm(first[[0, 2]], axis=1), 1.0, atol=1e-6)
    assert not first[1].any()
    assert np.allclose(first[0], first[2])
    assert isinstance(HashingEmbedder(), Embedder)


def test_texts_sharing_words_are_closer_with_the_hashing_embedder() -> None:
    [a, b, c] = HashingEmbedder().embed(["rust cargo build", "rust cargo test", "pizza oven"])

    assert float(a @ b) > float(a @ c)


def test_the_same_text_is_embedded_once(tmp_path: Path, clock: Callable[[], datetime]) -> None:
    counting = CountingEmbedder(HashingEmbedder())
    memory = _open(tmp_path / "mem", clock, counting)
    same = "Bob and Carol both like jazz"

    memory.assert_fact(subject="Bob", relation="likes", value="jazz", fact=same)
    memory.assert_fact(subject="Carol", relation="likes", value="jazz", fact=same)
    memory.rebuild()
    memory.close()

    assert counting.seen.count(same) == 1
    assert sorted(counting.seen) == sorted(set(counting.seen))
    assert counting.seen.count("Bob") == 1


def test_the_index_answers_the_exact_top_k_on_small_data(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    embedder = HashingEmbedder()
    memory = _open(tmp_path / "mem", clock, embedder)
    _fill(memory, 60)
    assert memory.similarity is not None
    query = embedder.embed(["who likes italian pasta food"])[0]

    found = memory.similarity.index.nearest("fact", query, 7)
    with memory.store.read() as connection:
        exact = brute_force(connection, "fact", query, 7, model=embedder.name)
    memory.close()

    assert [i for i, _ in found] == [i for i, _ in exact]
    assert np.allclose([s for _, s in found], [s for _, s in exact], atol=1e-5)


def test_similar_finds_facts_entities_and_messages(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    memory = _open(tmp_path / "mem", clock, HashingEmbedder())
    pizza = memory.assert_fact(
        subject="Bob", relation="likes", value="pizza", fact="Bob eats pizza"
    )
    memory.assert_fact(subject="Ann", relation="uses", value="rust", fact="Ann compiles rust")
    memory.record_message(
        episode="e1", speaker="user", text="my pizza was cold", at=datetime(2024, 1, 1, tzinfo=UTC)
    )

    facts = memory.similar("pizza", kind="fact", k=1)
    entities = memory.similar("Ann", kind="entity", k=1)
    messages = memory.similar("cold pizza", kind="message")
    exact = memory.similarity.similar_exact("pizza", kind="fact", k=1) if memory.similarity else []
    memory.close()

    assert [s.item_id for s in facts] == [pizza.fact_id] == [s.item_id for s in exact]
    assert entities[0].score == pytest.approx(1.0)
    assert len(messages) == 1 and messages[0].kind == "message"


def test_an_unknown_kind_is_refused_naming_the_kinds(memory: Memory) -> None:
    with pytest.raises(ValidationError, match="entity, fact, message"):
        memory.similar("x", kind="note")


def test_the_index_file_and_its_position_survive_reopen(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    embedder = HashingEmbedder()
    memory = _open(tmp_path / "mem", clock, embedder)
    _fill(memory, 20)
    before = memory.similar("rust cargo", k=5)
    memory.close()

    again = _open(tmp_path / "mem", clock, embedder)
    after = again.similar("rust cargo", k=5)
    assert again.similarity is not None
    opened = again.similarity.index.opened
    again.close()

    assert (tmp_path / "mem" / "vectors.faiss").exists()
    assert opened == "loaded"
    assert after == before


@pytest.mark.parametrize("damage", ["delete", "garbage", "truncated"])
def test_a_missing_or_damaged_index_file_is_rebuilt_on_open(
    tmp_path: Path, clock: Callable[[], datetime], damage: str
) -> None:
    embedder = HashingEmbedder()
    memory = _open(tmp_path / "mem", clock, embedder)
    _fill(memory, 10)
    memory.similar("music")
    memory.close()
    memory = _open(tmp_path / "mem", clock, embedder)
    _fill(memory, 5)
    expected = memory.similar("piano concert", k=15)
    memory.close()
    index_file = tmp_path / "mem" / "vectors.faiss"
    if damage == "delete":
        index_file.unlink()
    elif damage == "truncated":
        whole = index_file.read_bytes()
        index_file.write_bytes(whole[: len(whole) // 2])
    else:
        index_file.write_bytes(b"not an index")

    again = _open(tmp_path / "mem", clock, embedder)
    found = again.similar("piano concert", k=15)
    assert again.similarity is not None
    opened = again.similarity.index.opened
    again.close()

    assert opened == "rebuilt"
    assert found == expected


def test_the_index_follows_a_rebuild_of_the_read_models(memory: Memory) -> None:
    _fill(memory, 12)
    before = memory.similar("hiking summit", k=4)

    memory.rebuild()

    assert memory.similar("hiking summit", k=4) == before


def test_past_the_threshold_the_index_turns_to_hnsw_and_stays_sensible(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    embedder = HashingEmbedder()
    settings = _settings("[memory.vectors]\nhnsw_threshold = 40\n")
    memory = _open(tmp_path / "mem", clock, embedder, settings)
    _fill(memory, 30)
    assert memory.similarity is not None
    index = memory.similarity.index
    small = index.is_hnsw("fact")
    _fill(memory, 80)  # the first 30 are reinforced, 50 are new

    query = embedder.embed(["stock market shares trading"])[0]
    found = index.nearest("fact", query, 10)
    with memory.store.read() as connection:
        exact = brute_force(connection, "fact", query, 10, model=embedder.name)
    large = index.is_hnsw("fact")
    memory.close()

    assert (small, large) == (False, True)
    assert len({i for i, _ in found} & {i for i, _ in exact}) >= 8
    assert found[0] == pytest.approx(exact[0])


def test_an_item_whose_text_changes_is_found_by_its_new_text_only(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    embedder = HashingEmbedder()
    memory = _open(tmp_path / "mem", clock, embedder)
    memory.observe_entity(name="Zed", summary="a violin maker")
    memory.similar("violin", kind="entity")
    memory.observe_entity(name="Zed", summary="a tomato gardener")

    found = memory.similar("tomato gardener", kind="entity", k=5)
    items = memory.similarity.index.size("entity") if memory.similarity else 0
    memory.close()

    assert len(found) == 1 == items
    assert found[0].score > 0.5


def test_a_changed_text_leaves_its_old_vid_for_the_index_to_drop(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    memory = _open(tmp_path / "mem", clock, HashingEmbedder())
    memory.observe_entity(name="Zed", summary="a violin maker")
    memory.observe_entity(name="Ann", summary="a violin maker")
    with memory.store.read() as connection:
        before = last_vid(connection)
    memory.observe_entity(name="Zed", summary="a tomato gardener")

    with memory.store.read() as connection:
        now = last_vid(connection)
        replaced = list(replaced_between(connection, 0, now))
        later = list(replaced_between(connection, now, now + 10))
    memory.rebuild()
    with memory.store.read() as connection:
        rebuilt = list(replaced_between(connection, 0, now))
    memory.close()

    assert now > before
    assert len(replaced) == 1
    assert replaced[0][1] == "entity"
    assert replaced[0][0] < now
    assert later == []
    assert rebuilt == replaced  # the same log gives the same read model


def test_vectors_can_be_turned_off(tmp_path: Path, clock: Callable[[], datetime]) -> None:
    settings = _settings("[memory.vectors]\nenabled = false\n")
    memory = _open(tmp_path / "mem", clock, HashingEmbedder(), settings)
    memory.assert_fact(subject="Bob", relation="likes", value="jazz")

    with pytest.raises(Exception, match="vectors are disabled"):
        memory.similar("jazz")
    memory.close()


def test_the_hashing_embedder_can_be_chosen_by_setting(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    settings = _settings('[memory.vectors]\nembedder = "hashing"\nhashing_dimension = 32\n')

    memory = Memory.open(tmp_path / "mem", clock=clock, settings=settings)
    name = memory.similarity.embedder.name if memory.similarity else None
    memory.close()

    assert name == "hashing-32"


def test_a_direct_index_over_the_store_matches_the_memory(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    embedder = HashingEmbedder()
    memory = _open(tmp_path / "mem", clock, embedder)
    _fill(memory, 16)
    query = embedder.embed(["garden soil"])[0]
    expected = [(s.item_id, s.score) for s in memory.similar("garden soil", k=3)]

    index = VectorIndex(
        memory.store, model=embedder.name, dimension=256, path=tmp_path / "other.faiss"
    )
    found = index.nearest("fact", query, 3)
    memory.close()

    assert [i for i, _ in found] == [i for i, _ in expected]


def test_an_hnsw_index_never_answers_with_a_replaced_text(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    settings = _settings("[memory.vectors]\nhnsw_threshold = 2\n")
    memory = _open(tmp_path / "mem", clock, HashingEmbedder(), settings)
    for name in ("Ann", "Bob", "Zed"):
        memory.observe_entity(name=name, summary="a violin maker")
    memory.similar("violin", kind="entity")
    memory.observe_entity(name="Zed", summary="a tomato gardener")

    found = memory.similar("violin maker", kind="entity", k=10)
    assert memory.similarity is not None
    hnsw = memory.similarity.index.is_hnsw("entity")
    memory.close()

    assert hnsw
    assert len(found) == 3 == len({s.item_id for s in found})
    assert found[-1].score < found[0].score


def test_the_index_built_beside_the_catch_up_matches_one_built_after(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    toml = (
        "[memory.projection]\ninline = false\nbatch_size = 7\n"
        "[memory.vectors]\nhnsw_threshold = 30\n"
    )
    embedder = HashingEmbedder()
    memory = _open(tmp_path / "mem", clock, embedder, _settings(toml))
    _fill(memory, 50)
    for name in ("Ann", "Bob", "Ann"):
        memory.observe_entity(name=name, summary=f"{name} plays the violin at concerts")
    memory.projections.graph.catch_up()
    assert memory.similarity is not None
    similarity = memory.similarity

    done = memory.projections.catch_up_vectors()
    query = embedder.embed(["piano violin concert music"])[0]
    found = {kind: similarity.index.nearest(kind, query, 100) for kind in ("fact", "entity")}
    hnsw = similarity.index.is_hnsw("fact")
    other = VectorIndex(memory.store, model=embedder.name, dimension=256, path=tmp_path / "o")
    after = {kind: other.nearest(kind, query, 100) for kind in ("fact", "entity")}
    memory.close()

    assert done.batches > 3
    assert hnsw
    for kind in ("fact", "entity"):  # HNSW rescored by numpy, flat scored by FAISS
        assert [i for i, _ in found[kind]] == [i for i, _ in after[kind]]
        assert np.allclose([s for _, s in found[kind]], [s for _, s in after[kind]], atol=1e-6)
    assert len(found["fact"]) == 50


def test_an_index_file_behind_the_read_models_is_loaded_and_caught_up_from_their_table(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    embedder = HashingEmbedder()
    memory = _open(tmp_path / "mem", clock, embedder)
    _fill(memory, 10)
    before = memory.similar("piano concert", k=15)
    memory.close()
    index_file = tmp_path / "mem" / "vectors.faiss"
    behind = index_file.read_bytes()
    memory = _open(tmp_path / "mem", clock, embedder)
    memory.assert_facts(
        [
            {"subject": f"Pianist {i}", "relation": "plays", "value": f"concert {i}"}
            for i in range(5)
        ]
    )
    expected = memory.similar("piano concert", k=15)
    memory.close()
    index_file.write_bytes(behind)  # as another process's writes leave a reader's file

    again = _open(tmp_path / "mem", clock, embedder)
    found = again.similar("piano concert", k=15)
    assert again.similarity is not None
    opened = again.similarity.index.opened
    again.close()

    assert opened == "loaded"
    assert found == expected
    assert any(s.item_id not in {f.item_id for f in before} for s in found)
