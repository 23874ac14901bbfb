"""Recall latency on a synthetic agent memory, with FAISS timed against a full vector scan.

Run from the repository root:  python bench/recall.py [--sizes 10000,100000] [--queries 300]
A quick run (2,000 facts, nothing written unless --out is given):  python bench/recall.py --quick
Writes bench/results/recall.json; `--embedder hashing` swaps WordLlama for the hashing embedder;
`--profile FILE` also runs the BFS loop of the last size under cProfile into FILE (not timed).

The memory: people, organizations, places, tools, projects, events and categories with
made-up names, and `size` fact assertions between them over the four edge types (works_at
and lives_in single-valued, moving forward in valid time; uses, knows, works_on, depends_on,
located_in, part_of; caused and preceded between events; is_a), each with its sentence,
and one message per ten facts in conversations. The log is written by a child process with
inline projection off (as project.py does), projected once, and reopened with the default
settings for the queries. About `--queries` questions are drawn from the data (most name an
entity, some are plain words or unknown names); each recall mode, and each vector search,
is timed once per question with the first call excluded. Recall runs with the default
settings, so it records its usage events (appended every 32 recalls, then projected) as an
agent's recalls would; both vector searches include embedding the question. Beside the wall
latency each recall's CPU time (the process's own) is reported with the load average: the gap
between the two is time spent waiting for a core, which grows with the load.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final, NamedTuple

import msgspec
from dataclock import data_clock

from apexmem import AssertFact, Command, Memory, ObserveEntity, RecordMessage
from apexmem.domain.embedding import Embedder, HashingEmbedder
from apexmem.domain.settings import MemorySettings, ProjectionSettings, Settings
from apexmem.service.view import View

RESULTS: Final = Path(__file__).parent / "results" / "recall.json"
_QUICK_SIZE: Final = 2_000
_BATCH: Final = 1_000
_VALID_START: Final = datetime(2015, 1, 1, tzinfo=UTC)
_VALID_DAYS: Final = 3_650
_P95_TARGET_MS: Final = {10_000: 10.0, 100_000: 25.0}
_CONSONANTS: Final = "bdfgklmnprstvz"
_VOWELS: Final = "aeiou"
_ENDINGS: Final = ("", "", "", "n", "r", "l", "s", "th")
_ORG_SUFFIXES: Final = ("Labs", "Systems", "Works", "Group", "Studio", "Partners", "Inc")
_PLACE_SUFFIXES: Final = ("ton", "ville", "port", "by", "field", "haven")
_EVENT_KINDS: Final = ("outage", "launch", "migration", "incident", "release", "audit", "reorg")
_CATEGORIES: Final = (
    "database", "message queue", "web framework", "programming language", "build tool",
    "monitoring tool", "text editor", "cloud service", "test runner", "orm", "cache",
    "search engine", "container runtime", "ci service", "spreadsheet", "chat tool",
)  # fmt: skip
_PLAIN: Final = (
    "database migration", "deployment problems last week", "who is on call", "budget review",
    "coffee", "the quarterly roadmap", "flaky tests", "onboarding notes", "security audit",
    "what should I work on next", "latency regression", "hiring plan", "vacation schedule",
)  # fmt: skip


class World:
    """The named things of a memory of `size` facts, by entity type; pools scale with the size."""

    def __init__(self, size: int, seed: int) -> None:
        self._rng, self._used = random.Random(seed), set[str]()
        choice = self._rng.choice
        self.pools: dict[str, list[str]] = {
            "person": [f"{self._word()} {self._word()}" for _ in range(max(80, size // 25))],
            "organization": [
                f"{self._word()} {choice(_ORG_SUFFIXES)}" for _ in range(max(10, size // 250))
            ],
            "tool": [self._word() for _ in range(max(20, size // 125))],
            "project": [f"Project {self._word()}" for _ in range(max(20, size // 125))],
            "location": [
                self._word() + choice(_PLACE_SUFFIXES) for _ in range(max(20, size // 1000))
            ],
            "event": [f"{self._word()} {choice(_EVENT_KINDS)}" for _ in range(max(80, size // 25))],
            "concept": list(_CATEGORIES),
        }

    def _word(self) -> str:
        rng = self._rng
        while True:
            word = "".join(
                rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(rng.randint(2, 3))
            )
            word = (word + rng.choice(_ENDINGS)).capitalize()
            if word not in self._used:
                self._used.add(word)
                return word

    def counts(self) -> dict[str, int]:
        """How many names of each entity type."""
        return {kind: len(names) for kind, names in self.pools.items()}


class Relation(NamedTuple):
    """A relation of the workload: its ends' entity types, edge type and sentence verb."""

    name: str
    subject_type: str
    object_type: str
    edge_type: str = "semantic"
    verb: str | None = None


_RELATIONS: Final = (
    (0.12, Relation("works_at", "person", "organization", verb="works at")),
    (0.04, Relation("lives_in", "person", "location", verb="lives in")),
    (0.18, Relation("uses", "person", "tool")),
    (0.14, Relation("knows", "person", "person")),
    (0.10, Relation("works_on", "person", "project", verb="works on")),
    (0.10, Relation("depends_on", "project", "tool", verb="depends on")),
    (0.03, Relation("located_in", "organization", "location", verb="is located in")),
    (0.04, Relation("part_of", "project", "organization", "entity", "is part of")),
    (0.05, Relation("is_a", "tool", "concept", "entity", "is a")),
    (0.05, Relation("caused", "event", "event", "causal")),
    (0.05, Relation("caused", "event", "project", "causal")),
    (0.10, Relation("preceded", "event", "event", "temporal")),
)
_SINGLE_VALUED: Final = ("works_at", "lives_in")


class Workload:
    """A seeded stream of commands over a world: facts, with a message every tenth fact."""

    def __init__(self, world: World, seed: int) -> None:
        self.pools, self.rng = world.pools, random.Random(seed)
        self.latest: dict[tuple[str, str], datetime] = {}
        self.episode = 0

    def commands(self, facts: int) -> Iterator[Command]:
        """Summaries of the organizations and tools, then `facts` assertions and messages."""
        for kind, what in (("organization", "a company"), ("tool", "a software tool")):
            for name in self.pools[kind]:
                yield ObserveEntity(name=name, entity_type=kind, summary=f"{name}, {what}")
        for i in range(facts):
            if i % 20 == 0:
                self.episode += 1
            if i % 10 == 9:
                yield self._message()
            yield self._fact()

    def _fact(self) -> AssertFact:
        roll = self.rng.random()
        chosen = _RELATIONS[-1][1]
        for weight, relation in _RELATIONS:
            if roll < weight:
                chosen = relation
                break
            roll -= weight
        subject = self.rng.choice(self.pools[chosen.subject_type])
        target = self.rng.choice(self.pools[chosen.object_type])
        while target == subject:
            target = self.rng.choice(self.pools[chosen.object_type])
        return self._assert(chosen, subject, target, self._valid_from(chosen.name, subject))

    def _valid_from(self, relation: str, subject: str) -> datetime:
        """Random in the data's ten years; single-valued slots move forward per subject."""
        days = self.rng.randrange(_VALID_DAYS)
        if relation not in _SINGLE_VALUED:
            return _VALID_START + timedelta(days=days)
        last = self.latest.get((subject, relation))
        start = last + timedelta(days=self.rng.randrange(120, 900)) if last else None
        if start is None or start > _VALID_START + timedelta(days=_VALID_DAYS):
            start = _VALID_START + timedelta(days=days // 3)
        self.latest[(subject, relation)] = start
        return start

    def _assert(
        self, relation: Relation, subject: str, target: str, valid_from: datetime
    ) -> AssertFact:
        sentence = f"{subject} {relation.verb or relation.name} {target}"
        if relation.name == "caused" and relation.object_type == "project":
            sentence += " to fail"
        return AssertFact(
            subject=subject,
            subject_type=relation.subject_type,
            relation=relation.name,
            object=target,
            object_type=relation.object_type,
            edge_type=relation.edge_type,
            fact=sentence,
            confidence=round(self.rng.uniform(0.6, 1.0), 3),
            valid_from=valid_from,
            episode=f"session-{self.episode}",
            actor="bench",
        )

    def _message(self) -> RecordMessage:
        pick = {kind: self.rng.choice(names) for kind, names in self.pools.items()}
        text = self.rng.choice(
            (
                f"I met {pick['person']} at {pick['organization']} yesterday.",
                f"{pick['person']} says {pick['tool']} keeps crashing.",
                f"Can you remind me what {pick['project']} depends on?",
                f"The {pick['event']} was rough, we lost a day.",
            )
        )
        speaker = self.rng.choice(("user", "assistant"))
        return RecordMessage(episode=f"session-{self.episode}", speaker=speaker, text=text)


class SimulatedClock:
    """Recorded time advancing one hour per reading, so known-at times spread over the log."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(hours=1)
        return self.now


def _embedder(name: str) -> Embedder | None:
    return HashingEmbedder(256) if name == "hashing" else None


def write_log(directory: Path, size: int, seed: int, embedder: str) -> dict[str, Any]:
    """Write the workload's commands in batches, inline projection off; commands and seconds."""
    settings = Settings(memory=MemorySettings(projection=ProjectionSettings(inline=False)))
    commands = list(Workload(World(size, seed), seed + 1).commands(size))
    started = time.perf_counter()
    with Memory.open(
        directory, settings=settings, clock=SimulatedClock(), embedder=_embedder(embedder)
    ) as memory:
        for i in range(0, len(commands), _BATCH):
            memory.execute(commands[i : i + _BATCH])
        events = memory.log.last_position()
    seconds = time.perf_counter() - started
    return {"commands": len(commands), "events": events, "seconds": seconds}


def project(directory: Path, embedder: str) -> dict[str, Any]:
    """Catch the graph and then the vectors projection up from zero, timed apart."""
    settings = Settings(memory=MemorySettings(projection=ProjectionSettings(inline=False)))
    with Memory.open(directory, settings=settings, embedder=_embedder(embedder)) as memory:
        started = time.perf_counter()
        graph = memory.projections.graph.catch_up()
        graph_s = time.perf_counter() - started
        assert memory.projections.vectors is not None and memory.similarity is not None
        vectors = memory.projections.vectors.catch_up()
        vectors_s = time.perf_counter() - started - graph_s
        memory.similarity.index.sync()
        index_s = time.perf_counter() - started - graph_s - vectors_s
    return {
        "graph": {"events": graph.events, "seconds": graph_s},
        "vectors": {"events": vectors.events, "seconds": vectors_s},
        "faiss_index_s": index_s,
        "seconds": graph_s + vectors_s + index_s,
    }


class Question(NamedTuple):
    """A query, the entity it names (None for plain words or unknown names), past times,
    and whether that entity was already known at the past known-at time."""

    text: str
    names: str | None
    valid_at: datetime
    known_at: datetime
    known_then: bool


_TEMPLATES: Final = (
    ("person", "Who does {} work with?"), ("person", "What does {} use?"),
    ("person", "Where does {} work?"), ("person", "Who knows {}?"),
    ("project", "Why did {} fail?"), ("project", "What does {} depend on?"),
    ("tool", "{}"), ("tool", "What kind of tool is {}?"),
    ("event", "What happened before the {}?"), ("event", "What caused the {}?"),
    ("organization", "Where is {} located?"), ("organization", "Who works at {}?"),
)  # fmt: skip


def questions(world: World, memory: Memory, count: int, seed: int) -> list[Question]:
    """`count` questions: templates over the world's names, one in ten plain words, one in
    twenty an unknown person; valid-at and known-at times inside the data's ranges."""
    rng = random.Random(seed)
    first = next(memory.events()).recorded_at
    span = next(memory.events(start=memory.log.last_position())).recorded_at - first
    asked = []
    for _ in range(count):
        roll = rng.random()
        name: str | None = None
        if roll < 0.1:
            text = rng.choice(_PLAIN)
        elif roll < 0.15:
            text = f"Who is {World(1, rng.randrange(10**9)).pools['person'][0]}?"
        else:
            kind, template = rng.choice(_TEMPLATES)
            name = rng.choice(world.pools[kind])
            text = template.format(name)
        valid_at = _VALID_START + timedelta(days=rng.randrange(365, _VALID_DAYS))
        known_at = first + span * rng.uniform(0.25, 1.0)
        named = name if name is not None and _exists(memory, name) else None
        then = named is not None and _exists(memory.as_of(known_at=known_at), named)
        asked.append(Question(text, named, valid_at, known_at, then))
    return asked


def _exists(view: View, name: str) -> bool:
    return any(row.name == name for row in view.entities(name, limit=5))


class Answer(NamedTuple):
    """What one recall gave: how many hits, whether the time budget cut it short, and
    whether the entity the question names was among the graph expansion's seeds (None when
    the question names no entity known in the state recalled)."""

    hits: int
    cut_short: bool
    seeded: bool | None


Call = Callable[[Question], Answer]


def recaller(memory: Memory, mode: str, as_of: bool) -> Call:
    """`memory.recall` in `mode` (inside the question's past state when `as_of`)."""

    def call(q: Question) -> Answer:
        hits = memory.recall(
            q.text,
            limit=10,
            max_hops=2,
            mode=mode,
            valid_at=q.valid_at if as_of else None,
            known_at=q.known_at if as_of else None,
        )
        named = q.names if q.known_then or not as_of else None
        return Answer(len(hits), hits.cut_short, None if named is None else named in hits.seeds)

    return call


def timed(memory: Memory, call: Call, asked: Sequence[Question]) -> dict[str, Any]:
    """Each question asked once, the first call excluded: latency, rate, empties, recalls cut
    short and recalls over the time budget, and the usage events appended meanwhile."""
    call(asked[0])
    gc.collect()
    latencies, cpu, answers = [], [], []
    position = memory.log.last_position()
    load = os.getloadavg()[0]
    for q in asked:
        started, used = time.perf_counter(), time.process_time()
        answers.append(call(q))
        latencies.append(time.perf_counter() - started)
        cpu.append(time.process_time() - used)
    pairs = list(zip(asked, answers, strict=True))
    empty_named = [q.text for q, a in pairs if a.seeded is not None and not a.hits]
    unseeded = [q.text for q, a in pairs if a.seeded is False]
    budget = Settings().memory.graph.spreading_activation.recall_timeout_ms / 1e3
    return {
        "queries": len(asked),
        **percentiles(latencies),
        "queries_per_s": len(latencies) / sum(latencies),
        "mean_hits": statistics.fmean(a.hits for a in answers),
        "empty": sum(1 for a in answers if not a.hits),
        "naming_an_entity": sum(1 for a in answers if a.seeded is not None),
        "empty_naming_an_entity": len(empty_named),
        "empty_naming_examples": empty_named[:5],
        "named_entity_not_seeded": len(unseeded),
        "not_seeded_examples": unseeded[:5],
        "cut_short": sum(a.cut_short for a in answers),
        "over_budget": sum(1 for t in latencies if t > budget),
        "max_ms": max(latencies) * 1e3,
        "events_appended": memory.log.last_position() - position,
        # The process's own CPU time per recall; the gap to the wall latency is waiting.
        "cpu": percentiles(cpu),
        "load_average": [load, os.getloadavg()[0]],
    }


def percentiles(latencies: list[float]) -> dict[str, float]:
    """p50, p95 and p99 in milliseconds."""
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    return {"p50_ms": cuts[49] * 1e3, "p95_ms": cuts[94] * 1e3, "p99_ms": cuts[98] * 1e3}


def vector_search(memory: Memory, asked: Sequence[Question], exact_count: int) -> dict[str, Any]:
    """Nearest 10 facts by FAISS (every question) and by a full scan (the first `exact_count`),
    and how many of the scan's top 10 FAISS found (ids; and scores, where ties may swap ids)."""
    similarity = memory.similarity
    assert similarity is not None
    texts = [q.text for q in asked]
    faiss = _latencies(lambda t: similarity.similar(t, kind="fact", k=10), texts)
    scan = _latencies(lambda t: similarity.similar_exact(t, kind="fact", k=10), texts[:exact_count])
    by_id = by_score = total = 0
    for text in texts[:exact_count]:
        found = similarity.similar(text, kind="fact", k=10)
        exact = similarity.similar_exact(text, kind="fact", k=10)
        ids = {s.item_id for s in found}
        by_id += sum(1 for s in exact if s.item_id in ids)
        floor = min((s.score for s in exact), default=1.0) - 1e-5
        by_score += min(len(exact), sum(1 for s in found if s.score >= floor))
        total += len(exact)
    return {
        "facts_indexed": similarity.index.size("fact"),
        "index": "hnsw" if similarity.index.is_hnsw("fact") else "exact (flat)",
        "faiss": faiss,
        "scan": scan,
        "speedup_p50": scan["p50_ms"] / faiss["p50_ms"],
        "recall_at_10": by_id / total if total else None,
        "recall_at_10_tie_aware": by_score / total if total else None,
    }


def _latencies(search: Callable[[str], object], texts: Sequence[str]) -> dict[str, Any]:
    search(texts[0])
    latencies = []
    for text in texts:
        started = time.perf_counter()
        search(text)
        latencies.append(time.perf_counter() - started)
    return {
        "queries": len(texts),
        **percentiles(latencies),
        "queries_per_s": len(texts) / sum(latencies),
    }


def run(size: int, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Build, project and query one memory of `size` facts."""
    directory = root / f"memory-{size}"
    with ProcessPoolExecutor(max_workers=1) as writer:
        built = writer.submit(write_log, directory, size, args.seed, args.embedder).result()
    projected = project(directory, args.embedder)
    world = World(size, args.seed)
    with Memory.open(
        directory,
        settings=Settings(),
        embedder=_embedder(args.embedder),
        clock=data_clock(directory),
    ) as memory:
        asked = questions(world, memory, args.queries, args.seed + 2)
        modes = {
            "bfs": ("bfs", False),
            "activation": ("activation", False),
            "bfs_as_of": ("bfs", True),
        }
        recall = {
            label: timed(memory, recaller(memory, m, a), asked) for label, (m, a) in modes.items()
        }
        vectors = vector_search(memory, asked, args.exact_queries)
        if args.profile is not None:
            profile(recaller(memory, "bfs", False), asked, args.profile)
        graph = memory.stats().graph
    return {
        "size": size,
        "world": world.counts(),
        "build": built,
        "projection": projected,
        "graph": {f: getattr(graph, f) for f in graph.__struct_fields__},
        "questions": {
            "count": len(asked),
            "naming_an_entity": sum(q.names is not None for q in asked),
        },
        "recall": recall,
        "vectors": vectors,
    }


def profile(call: Call, asked: Sequence[Question], path: Path) -> None:
    """The BFS loop again under cProfile (its figures are not the timed ones)."""
    call(asked[0])
    profiler = cProfile.Profile()
    profiler.enable()
    for q in asked:
        call(q)
    profiler.disable()
    profiler.dump_stats(path)


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    packages = ("faiss-cpu", "wordllama", "numpy", "sqlalchemy", "msgspec", "apexmem")

    def git(*words: str) -> str:
        return subprocess.run(["git", *words], capture_output=True, text=True, check=False).stdout

    commit = git("rev-parse", "--short", "HEAD").strip()
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "sqlite": sqlite3.sqlite_version,
        "date": datetime.now(UTC).date().isoformat(),
        "apexmem_commit": commit or None,
        "apexmem_uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no")),
        **{name: version(name) for name in packages},
    }


def table(runs: Sequence[dict[str, Any]]) -> str:
    """The figures as text: one block per size."""
    lines = []
    head = f"{'':<22}" + "".join(f"{h:>9}" for h in ("p50 ms", "p95 ms", "p99 ms", "q/s"))
    head += f"{'empty':>7}{'short':>7}{'>budget':>9}{'unseeded':>10}{'cpu p50/p95':>13}{'load':>6}"
    for r in runs:
        build, proj = r["build"]["seconds"], r["projection"]
        lines += [
            f"{r['size']:,} facts ({r['build']['events']:,} events): build {build:.1f} s, "
            f"projection {proj['graph']['seconds']:.1f} s graph + "
            f"{proj['vectors']['seconds']:.1f} s vectors + {proj['faiss_index_s']:.1f} s FAISS",
            head,
        ]
        for label, t in r["recall"].items():
            counts = "".join(
                f"{t[k]:>{w}}" for k, w in (("empty", 7), ("cut_short", 7), ("over_budget", 9))
            )
            counts += f"{t['named_entity_not_seeded']:>5}/{t['naming_an_entity']:<4}"
            counts += f"{t['cpu']['p50_ms']:>6.1f}/{t['cpu']['p95_ms']:<6.1f}"
            counts += f"{t['load_average'][0]:>5.1f}"
            lines.append(_row(f"recall {label}", t) + counts)
        v = r["vectors"]
        lines += [_row("similar (FAISS)", v["faiss"]), _row("similar_exact (scan)", v["scan"])]
        lines.append(
            f"  FAISS {v['index']} over {v['facts_indexed']:,} facts: {v['speedup_p50']:.1f}x "
            f"faster at p50, recall@10 {v['recall_at_10']:.3f} "
            f"(tie-aware {v['recall_at_10_tie_aware']:.3f})"
        )
        lines.append("")
    return "\n".join(lines)


def _row(label: str, t: dict[str, Any]) -> str:
    figures = "".join(f"{t[k]:>9.2f}" for k in ("p50_ms", "p95_ms", "p99_ms"))
    return f"{label:<22}{figures}{t['queries_per_s']:>9.0f}"


def targets(runs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The BFS p95 targets for the sizes that have one, and whether they were met."""
    found = {}
    for r in runs:
        if (target := _P95_TARGET_MS.get(r["size"])) is not None:
            p95 = r["recall"]["bfs"]["p95_ms"]
            found[f"bfs_p95_ms_at_{r['size']}"] = {
                "target": target,
                "measured": p95,
                "met": p95 <= target,
                "cpu_p95_ms": r["recall"]["bfs"]["cpu"]["p95_ms"],
                "load_average": r["recall"]["bfs"]["load_average"],
            }
    return found


def main(argv: list[str] | None = None) -> int:
    """Run every size, print the table, write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="fact assertions, comma-separated")
    parser.add_argument("--queries", type=int, default=300, help="questions per size")
    parser.add_argument("--exact-queries", type=int, default=100, help="questions also scanned")
    parser.add_argument("--embedder", choices=("wordllama", "hashing"), default="wordllama")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", type=Path, default=None, help="cProfile the last BFS loop")
    parser.add_argument("--quick", action="store_true", help=f"one size of {_QUICK_SIZE:,} facts")
    parser.add_argument("--out", type=Path, default=None, help=f"default: {RESULTS}")
    args = parser.parse_args(argv)
    sizes = [_QUICK_SIZE] if args.quick else [int(s) for s in args.sizes.split(",")]
    measured_on = machine()  # before the runs: the code measured is the code imported now
    runs = []
    with tempfile.TemporaryDirectory(prefix="apexmem-bench-") as work:
        for i, size in enumerate(sizes):
            chosen = args.profile if i == len(sizes) - 1 else None
            runs.append(
                run(size, argparse.Namespace(**{**vars(args), "profile": chosen}), Path(work))
            )
    result = {
        "machine": measured_on,
        "command": " ".join(
            ["python", "bench/recall.py", *(sys.argv[1:] if argv is None else argv)]
        ),
        "embedder": args.embedder,
        "settings": msgspec.to_builtins(Settings().memory),
        "sizes": sizes,
        "runs": runs,
        "targets": targets(runs),
    }
    print(table(runs))
    print(json.dumps(result["targets"], indent=2))
    out = args.out or (None if args.quick else RESULTS)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
