"""The FAISS index at scale without the rest of the suite: build, save, load, search, recall.

Run from the repository root:  python bench/vectors.py --faiss 1000000 [--baseline OLD.py]

The vectors are real: the suite's workload of `facts` assertions (bench/workload.py) gives
the texts, WordLlama embeds them (distinct fact sentences, messages, entity names: about
1.06 items per fact), and they are written straight into a read-model store's vector
tables, as the vectors projection would leave them. Each measurement then runs in a
fresh process, so its peak RSS (VmHWM) is its own: one opens the index with no file
(a build from the SQL vectors) and saves it, the next opens it from the file. Questions
from bench/recall.py's templates and the workload's messages are answered by the index
and by an exact scan of the same float32 vectors; recall@10 counts the index's answers
whose exact cosine reaches the scan's tenth (equal scores may swap ids).

`--baseline FILE` runs a `VectorIndex` from another module file the same way, in the same
run (for instance the previous version: `git show HEAD:readmodels/vector_index.py`).
`--ef-construction N` overrides HNSW's efConstruction for the run.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import random
import resource
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Final

import numpy as np
from recall import _TEMPLATES, World
from sqlalchemy import insert
from workload import Workload

from apexmem import AssertFact, RecordMessage
from apexmem.embedders import WordLlamaEmbedder
from apexmem.readmodels.store import ReadModelStore, set_position
from apexmem.readmodels.vectors import (
    VECTORS,
    text_key,
    vector_cache,
    vector_items,
    vector_metadata,
)

__all__ = ["RECALL_FLOOR", "below_floor", "run"]

_QUESTIONS: Final = 500
RECALL_FLOOR: Final = 0.97
"""The recall@10 against an exact scan the index must reach: `python bench/vectors.py
--faiss N` exits 1 below it."""
_ROWS: Final = 20_000


def texts(facts: int, seed: int = 7) -> dict[str, list[str]]:
    """The workload's distinct fact sentences, messages and entity names (one vector each)."""
    sentences: dict[str, None] = {}
    messages: dict[str, None] = {}
    names: dict[str, None] = {}
    for items in Workload(facts, seed).appends():
        for item in items:
            if isinstance(item, AssertFact) and item.fact:
                sentences[item.fact] = None
                names[item.subject] = None
                if item.object:
                    names[item.object] = None
            elif isinstance(item, RecordMessage):
                messages[item.text] = None
    return {"fact": list(sentences), "message": list(messages), "entity": list(names)}


def fill(directory: Path, by_kind: dict[str, list[str]]) -> tuple[Any, Any]:
    """Embed every text into a fresh store's vector tables; (fact matrix, message matrix)."""
    embedder = WordLlamaEmbedder()
    store = ReadModelStore(directory / "readmodels.db")
    vector_metadata.create_all(store.engine)
    rng = random.Random(11)
    vid = 0
    kept: dict[str, Any] = {}
    try:
        for kind, chosen in by_kind.items():
            matrix = np.empty((len(chosen), embedder.dimension), dtype=np.float32)
            for i in range(0, len(chosen), _ROWS):
                part = chosen[i : i + _ROWS]
                vectors = embedder.embed(part)
                matrix[i : i + len(part)] = vectors
                keys = [text_key(f"{kind}:{text}") for text in part]
                items = []
                for key in keys:
                    vid += 1
                    item = uuid.UUID(int=rng.getrandbits(128))
                    items.append({"vid": vid, "kind": kind, "item_id": item, "key": key})
                with store.write() as connection:
                    connection.execute(
                        insert(vector_cache),
                        [
                            {"model": embedder.name, "text_key": k, "vector": v.tobytes()}
                            for k, v in zip(keys, vectors, strict=True)
                        ],
                    )
                    connection.execute(
                        insert(vector_items),
                        [
                            {
                                "vid": r["vid"],
                                "kind": r["kind"],
                                "item_id": r["item_id"],
                                "model": embedder.name,
                                "text_key": r["key"],
                            }
                            for r in items
                        ],
                    )
            kept[kind] = matrix
        with store.write() as connection:
            set_position(connection, VECTORS, vid)
    finally:
        store.close()
    return kept["fact"], kept["message"]


def _peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _module(source: str | None) -> Any:
    if source is None:
        from apexmem.readmodels import vector_index

        return vector_index
    spec = importlib.util.spec_from_file_location("baseline_vector_index", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _index(directory: Path, source: str | None, ef_construction: int | None) -> Any:
    module = _module(source)
    if ef_construction is not None:
        for name in ("HNSW_EF_CONSTRUCTION", "_HNSW_EF_CONSTRUCTION"):
            if hasattr(module, name):
                setattr(module, name, ef_construction)
    store = ReadModelStore(directory / "readmodels.db")
    embedder = WordLlamaEmbedder()
    return module.VectorIndex(store, model=embedder.name, dimension=embedder.dimension), store


def build(directory: Path, source: str | None, ef_construction: int | None) -> dict[str, Any]:
    """In a fresh process: open with no index file (a build from SQL), then save."""
    index, store = _index(directory, source, ef_construction)
    index.path.unlink(missing_ok=True)
    before = _peak_mib()
    cpu = time.process_time()
    started = time.perf_counter()
    index.sync()
    built_s = time.perf_counter() - started
    built_cpu = time.process_time() - cpu
    built_peak = _peak_mib()
    started = time.perf_counter()
    index.save()
    saved_s = time.perf_counter() - started
    result = {
        "opened": index.opened,
        "hnsw": index.is_hnsw("fact"),
        "build_s": built_s,
        "build_cpu_s": built_cpu,
        "save_s": saved_s,
        "file_bytes": index.path.stat().st_size,
        "peak_mib_at_start": before,
        "peak_mib_after_build": built_peak,
        "peak_mib_after_save": _peak_mib(),
    }
    store.close()
    return result


def load(directory: Path, source: str | None, questions: Any, k: int = 10) -> dict[str, Any]:
    """In a fresh process: open from the file, then answer every question (fact kind)."""
    index, store = _index(directory, source, None)
    before = _peak_mib()
    started = time.perf_counter()
    index.sync()
    load_s = time.perf_counter() - started
    loaded_peak = _peak_mib()
    answers, latencies = [], []
    for query in questions:
        started = time.perf_counter()
        found = index.nearest("fact", query, k)
        latencies.append(time.perf_counter() - started)
        answers.append([score for _, score in found])
    store.close()
    return {
        "opened": index.opened,
        "load_s": load_s,
        "peak_mib_at_start": before,
        "peak_mib_after_load": loaded_peak,
        "peak_mib_after_queries": _peak_mib(),
        "query_p50_ms": statistics.median(latencies) * 1e3,
        "query_p95_ms": statistics.quantiles(latencies, n=20)[18] * 1e3,
        "scores": answers,
    }


def _exact_floor(facts: Any, questions: Any, k: int) -> Any:
    """The exact k-th best cosine of every question over the fact vectors."""
    floors = np.empty(len(questions), dtype=np.float32)
    for i in range(0, len(questions), 100):
        scores = questions[i : i + 100] @ facts.T
        floors[i : i + 100] = -np.partition(-scores, k - 1, axis=1)[:, k - 1]
    return floors


def _recall(scores: list[list[float]], floors: Any, k: int) -> float:
    hits = sum(
        min(k, sum(1 for s in found if s >= floor - 1e-5))
        for found, floor in zip(scores, floors, strict=True)
    )
    return hits / (k * len(scores))


def _questions(messages: Any, count: int) -> tuple[Any, list[str]]:
    rng = random.Random(5)
    world = World(10_000, 7)
    asked = []
    for _ in range(count):
        kind, template = rng.choice(_TEMPLATES)
        asked.append(template.format(rng.choice(world.pools[kind])))
    embedded = WordLlamaEmbedder().embed(asked)
    picked = messages[rng.sample(range(len(messages)), min(count, len(messages)))]
    return np.concatenate([embedded, picked]).astype(np.float32), asked


def _in_child(run: Any, *arguments: Any) -> Any:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as child:
        return child.submit(run, *arguments).result()


def run(
    facts: int, *, baseline: str | None = None, ef_construction: int | None = None
) -> dict[str, Any]:
    """Every measurement on the workload of `facts` assertions; the current code, and the
    baseline module's when given, each built and loaded in its own processes."""
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    started = time.perf_counter()
    by_kind = texts(facts)
    with tempfile.TemporaryDirectory(prefix="apexmem-faiss-") as scratch:
        directory = Path(scratch)
        fact_matrix, messages = fill(directory, by_kind)
        prepared_s = time.perf_counter() - started
        questions, _ = _questions(messages, _QUESTIONS)
        floors = _exact_floor(fact_matrix, questions, 10)
        del fact_matrix
        runs: dict[str, Any] = {}
        for label, source in (("current", None), ("baseline", baseline)):
            if label == "baseline" and source is None:
                continue
            built = _in_child(build, directory, source, ef_construction)
            loaded = _in_child(load, directory, source, questions)
            scores = loaded.pop("scores")
            runs[label] = {
                "build": built,
                "load": loaded,
                "recall_at_10": _recall(scores, floors, 10),
            }
    return {
        "facts": facts,
        "vectors": {kind: len(chosen) for kind, chosen in by_kind.items()},
        "dimension": 256,
        "questions": len(questions),
        "ef_construction": ef_construction,
        "prepared_s": prepared_s,
        "load_average": {
            "before": load_before,
            "after": Path("/proc/loadavg").read_text().split()[:3],
        },
        "runs": runs,
    }


def below_floor(result: dict[str, Any]) -> list[str]:
    """The runs of `result` whose recall@10 is under `RECALL_FLOOR`, each with its figure."""
    return [
        f"{label}: recall@10 {measured['recall_at_10']:.3f} < {RECALL_FLOOR}"
        for label, measured in result["runs"].items()
        if measured["recall_at_10"] < RECALL_FLOOR
    ]


if __name__ == "__main__":
    sys.exit("run it as: python bench/vectors.py --faiss 1000000")
