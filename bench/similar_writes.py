"""What similarity on the write path costs: resolution by similarity and belief revision.

Run from the repository root:  python bench/similar_writes.py [--rounds 5]

Two workloads, each in a fresh memory (WordLlama, inline projection) per configuration
and round, configurations interleaved (reversed every other round), medians reported:

- new names: 1,000 assertions in 20 batches of 50, each between two names never seen
  (2,000 new entities), with the features off, names only, beliefs only, both;
- existing people: 1,000 assertions (likes / dislikes / knows) between 50 people observed
  first, with belief revision off and on.

Times are the writer's alone (deciding and appending under the write lock), then with the
inline projection that follows each write. The machine is shared: compare ratios.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from apexmem import AssertFact, Command, Memory, ObserveEntity, Settings, parse_settings
from apexmem.domain.embedding import Embedder
from apexmem.embedders import WordLlamaEmbedder

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
]
PEOPLE = [f"Person {chr(65 + i // 26)}{chr(65 + i % 26)}" for i in range(50)]
RELATIONS = ("likes", "dislikes", "knows")


def _settings(toml: str) -> Settings:
    return parse_settings(toml)[0]


CONFIGS = {
    "off": _settings(""),
    "names": _settings("[memory.graph]\nuse_embedding_resolution = true\n"),
    "beliefs": _settings("[memory.graph.belief_revision]\nenabled = true\n"),
    "both": _settings(
        "[memory.graph]\nuse_embedding_resolution = true\n"
        "[memory.graph.belief_revision]\nenabled = true\n"
    ),
}


def new_names(seed: int) -> list[list[Command]]:
    """20 batches of 50 assertions between names never seen (subjects and objects apart)."""
    rng = random.Random(seed)
    batches: list[list[Command]] = []
    for b in range(20):
        batch: list[Command] = []
        for i in range(50):
            subject = f"{rng.choice(WORDS[:13]).title()} {rng.choice(WORDS[:13]).title()} {b}{i}a"
            target = f"{rng.choice(WORDS[13:]).title()} {rng.choice(WORDS[13:]).title()} {b}{i}b"
            batch.append(_fact(subject, rng.choice(RELATIONS), target))
        batches.append(batch)
    return batches


def existing_people(seed: int) -> list[list[Command]]:
    """The 50 people first, then 20 batches of 50 assertions between two of them."""
    rng = random.Random(seed)
    batches: list[list[Command]] = [[ObserveEntity(name=p, entity_type="person") for p in PEOPLE]]
    for _ in range(20):
        pairs = [rng.sample(PEOPLE, 2) for _ in range(50)]
        batches.append([_fact(s, rng.choice(RELATIONS), o) for s, o in pairs])
    return batches


def _fact(subject: str, relation: str, target: str) -> AssertFact:
    return AssertFact(
        subject=subject,
        subject_type="person",
        relation=relation,
        object=target,
        object_type="person",
    )


def run(
    settings: Settings, batches: Sequence[list[Command]], embedder: Embedder, *, setup: int
) -> tuple[float, float]:
    """(seconds in the writer, seconds with the inline projection), leaving out the first
    `setup` batches (they set the stage)."""
    with tempfile.TemporaryDirectory(prefix="apexmem-similar-") as root:
        memory = Memory.open(Path(root) / "mem", settings=settings, embedder=embedder)
        writer = total = 0.0
        for i, batch in enumerate(batches):
            started = time.perf_counter()
            memory._writer.execute(batch)
            written = time.perf_counter()
            memory._ready()
            if i >= setup:
                writer += written - started
                total += time.perf_counter() - started
        memory.close()
    return writer, total


def main() -> None:
    """Measure both workloads and print medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    embedder = WordLlamaEmbedder()
    embedder.embed(["warm up"])
    workloads = {
        "new names": (new_names, 0, ["off", "names", "beliefs", "both"]),
        "existing people": (existing_people, 1, ["off", "beliefs"]),
    }
    for title, (make, setup, names) in workloads.items():
        found: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
        for r in range(rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                found[name].append(run(CONFIGS[name], make(r), embedder, setup=setup))
        for name, runs in found.items():
            writer = statistics.median(w for w, _ in runs) * 1000
            total = statistics.median(t for _, t in runs) * 1000
            print(f"{title:16} {name:8} writer {writer:7.0f} ms  with projection {total:7.0f} ms")


if __name__ == "__main__":
    main()
