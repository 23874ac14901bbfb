"""Graphiti beside apexmem: one-fact adds, default search and a 2-hop walk, same facts.

Run with the main python: `python bench/graphiti_beside.py --sizes 1000`. The apexmem side
runs in this process; the Graphiti side runs in its own virtualenv (`--venv`, default
/tmp/gvenv, holding graphiti-core, kuzu and wordllama from PyPI) as a subprocess of this
file (`--side graphiti`), with its embedded Kuzu driver in a fresh directory. Graphiti's
LLM is a local OpenAI-compatible test double (`--side double`, a separate process) that
answers every structured call at once with the smallest valid answer (no duplicate, no
contradiction, nothing extracted): Graphiti measured here is faster than with a real
model. Both sides embed with WordLlama (l2_supercat, 256 dimensions) in process, loaded
from the wheel's own files; nothing is downloaded.

Measured on each side, sizes in turn, apexmem first: each fact added alone (apexmem
`Memory.assert_fact`, Graphiti `add_triplet` of an EntityNode, EntityEdge, EntityNode),
then `queries` default searches (`Memory.recall(q)`, `Graphiti.search(q)`), then
`queries` walks of `hops` hops from a person (`Memory.as_of().traverse`, Graphiti
`search_` with only the BFS edge method from the person's node).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

__all__ = ["markdown", "measure_apexmem", "queries", "starts", "triples"]

Triple = tuple[str, str, str, str]  # subject, relation, object, sentence
Run = dict[str, Any]
_FIRST: Final = (
    "Ada", "Bruno", "Chen", "Dara", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas",
    "Kaito", "Lena", "Mateo", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tara",
)  # fmt: skip
_LAST: Final = (
    "Vance", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Novak", "Silva", "Haddad",
    "Kowalski", "Reyes", "Brandt", "Iyer", "Mensah", "Costa", "Ferrand", "Holm",
)  # fmt: skip
_TOOLS: Final = (
    "Postgres", "Kafka", "Redis", "Terraform", "Grafana", "Airflow", "Spark", "Docker",
    "Kubernetes", "Jenkins", "Figma", "Jira", "Rust", "Haskell", "Elixir", "Django",
)  # fmt: skip
_PLACES: Final = (
    "Lisbon", "Oslo", "Nairobi", "Osaka", "Lima", "Tallinn", "Porto", "Quebec",
    "Accra", "Busan", "Cork", "Dakar", "Graz", "Hanoi", "Leeds", "Medellin",
)  # fmt: skip
_RELATIONS: Final = (
    ("knows", "person", "knows"),
    ("uses", "tool", "uses"),
    ("visited", "place", "visited"),
    ("works_with", "person", "works with"),
)


def _people(size: int) -> list[str]:
    names = [f"{f} {last}" for last in _LAST for f in _FIRST]
    wanted = max(50, size // 4)
    return [n if i < len(names) else f"{n} {i // len(names)}" for i, n in
            ((i, names[i % len(names)]) for i in range(wanted))]  # fmt: skip


def triples(size: int, seed: int) -> list[Triple]:
    """`size` distinct facts between people, tools and places, the same for any seed reuse."""
    rng = random.Random(seed)
    people = _people(size)
    kinds = {"person": people, "tool": list(_TOOLS), "place": list(_PLACES)}
    seen: set[tuple[str, str, str]] = set()
    out: list[Triple] = []
    while len(out) < size:
        relation, kind, verb = rng.choice(_RELATIONS)
        subject, obj = rng.choice(people), rng.choice(kinds[kind])
        if obj == subject or (subject, relation, obj) in seen:
            continue
        seen.add((subject, relation, obj))
        out.append((subject, relation, obj, f"{subject} {verb} {obj}"))
    return out


def queries(facts: list[Triple], count: int, seed: int) -> list[str]:
    """Questions about subjects that have facts, in plain words."""
    rng = random.Random(seed + 1)
    forms = ("What does {s} use?", "Who does {s} know?", "Where has {s} been?",
             "Who works with {s}?")  # fmt: skip
    return [rng.choice(forms).format(s=rng.choice(facts)[0]) for _ in range(count)]


def starts(facts: list[Triple], count: int, seed: int) -> list[str]:
    """People to walk from: subjects that have facts."""
    rng = random.Random(seed + 2)
    return [rng.choice(facts)[0] for _ in range(count)]


def _summary(ms: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(ms, n=100, method="inclusive")
    return {"p50_ms": round(cuts[49], 2), "p95_ms": round(cuts[94], 2), "n": len(ms)}


def _timed(calls: Iterable[Callable[[], Any]]) -> tuple[list[float], list[Any]]:
    ms, results = [], []
    for call in calls:
        t = time.perf_counter()
        results.append(call())
        ms.append((time.perf_counter() - t) * 1000)
    return ms, results


def measure_apexmem(facts: list[Triple], asked: list[str], walks: list[str], hops: int) -> Run:
    """One-fact adds, default recalls and `hops`-hop traversals on a fresh apexmem memory."""
    from apexmem import Memory

    with tempfile.TemporaryDirectory(prefix="apexmem-beside-") as home, Memory.open(home) as m:
        m.recall("warm up the embedder")
        t0 = time.perf_counter()
        added, _ = _timed(
            partial(
                m.assert_fact, subject=f[0], relation=f[1], object=f[2], subject_type="person",
                object_type="person" if f[1] in ("knows", "works_with") else "concept",
                fact=f[3],
            )
            for f in facts
        )  # fmt: skip
        t1 = time.perf_counter()
        m.project()  # whatever projection is left before a read counts in the rate
        wall, catch_up = time.perf_counter() - t0, time.perf_counter() - t1
        rate = round(len(facts) / wall, 1)
        searched, got = _timed(partial(m.recall, q) for q in asked)
        view = m.as_of()
        walked, walk = _timed(partial(view.traverse, s, max_hops=hops) for s in walks)
        return {
            "add": _summary(added) | {"facts_per_s": rate, "catch_up_ms": round(catch_up * 1000)},
            "search": _summary(searched) | {"mean_hits": statistics.mean(len(r.hits) for r in got)},
            "walk": _summary(walked) | {"mean_facts": statistics.mean(len(g.facts) for g in walk)},
        }


def _minimal(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """The smallest instance of a JSON schema: empty lists, -1, "", false, nulls allowed."""
    if "$ref" in schema:
        return _minimal(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "default" in schema or "enum" in schema:
        return schema.get("default", schema.get("enum", [None])[0])
    options = schema.get("anyOf", [])
    if options:
        nullable = any(o.get("type") == "null" for o in options)
        return None if nullable else _minimal(options[0], defs)
    kind = schema.get("type", "object")
    props = schema.get("properties", {})
    empty = {"array": [], "string": "", "integer": -1, "number": 0.0, "boolean": False}
    if kind == "object":
        return {k: _minimal(props[k], defs) for k in schema.get("required", [])}
    return empty.get(kind)


class _Double(BaseHTTPRequestHandler):
    calls = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Double.calls += 1
        shape = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
        answer = _minimal(shape, shape.get("$defs", {})) if shape else {}
        self._send({
            "id": f"double-{_Double.calls}", "object": "chat.completion", "created": 0,
            "model": body.get("model", "double"),
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": json.dumps(answer)}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })  # fmt: skip

    def do_GET(self) -> None:
        self._send({"calls": _Double.calls})

    def _send(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def _serve_double(port: int) -> None:
    ThreadingHTTPServer(("127.0.0.1", port), _Double).serve_forever()


async def _graphiti(
    facts: list[Triple], asked: list[str], walks: list[str], *, hops: int, base_url: str, home: str
) -> Run:
    """Graphiti's side, in its virtualenv: the same three measures on embedded Kuzu."""
    import numpy as np
    from graphiti_core import Graphiti  # type: ignore[import-not-found]
    from graphiti_core.cross_encoder.openai_reranker_client import OpenAIRerankerClient  # type: ignore[import-not-found]
    from graphiti_core.driver.kuzu_driver import KuzuDriver  # type: ignore[import-not-found]
    from graphiti_core.edges import EntityEdge  # type: ignore[import-not-found]
    from graphiti_core.embedder.client import EmbedderClient  # type: ignore[import-not-found]
    from graphiti_core.llm_client.config import LLMConfig  # type: ignore[import-not-found]
    from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient  # type: ignore[import-not-found]
    from graphiti_core.nodes import EntityNode  # type: ignore[import-not-found]
    from graphiti_core.search.search_config import (  # type: ignore[import-not-found]
        EdgeSearchConfig,
        EdgeSearchMethod,
        SearchConfig,
    )
    from wordllama import WordLlama

    logging.getLogger().setLevel(logging.WARNING)  # wordllama's import set it to INFO
    files = Path(sys.modules["wordllama"].__file__ or "").parent
    model = WordLlama.load("l2_supercat", cache_dir=files, dim=256, disable_download=True)

    class WordLlamaEmbedder(EmbedderClient):  # type: ignore[misc]
        async def create(self, input_data: Any) -> list[float]:
            text = input_data if isinstance(input_data, str) else " ".join(map(str, input_data))
            vector: list[float] = np.asarray(model.embed([text], norm=True)[0], float).tolist()
            return vector

        async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
            found = model.embed(input_data_list, norm=True)
            vectors: list[list[float]] = np.asarray(found, float).tolist()
            return vectors

    config = LLMConfig(api_key="double", base_url=base_url, model="double", small_model="double")
    driver = KuzuDriver(db=str(Path(home) / "graph.kuzu"))
    await driver.graph_ops.build_indices_and_constraints(driver)  # the Kuzu FTS indexes
    g = Graphiti(
        graph_driver=driver,
        llm_client=OpenAIGenericClient(config=config),
        embedder=WordLlamaEmbedder(),
        cross_encoder=OpenAIRerankerClient(config=config),
    )
    await g.build_indices_and_constraints()
    group = "bench"
    nodes: dict[str, EntityNode] = {}

    def node(name: str) -> EntityNode:
        if name not in nodes:
            nodes[name] = EntityNode(name=name, group_id=group, labels=["Entity"])
        return nodes[name]

    added = []
    t0 = time.perf_counter()
    for subject, relation, obj, sentence in facts:
        source, target = node(subject), node(obj)
        edge = EntityEdge(
            group_id=group, source_node_uuid=source.uuid, target_node_uuid=target.uuid,
            created_at=datetime.now(UTC), name=relation, fact=sentence,
            valid_at=datetime.now(UTC),
        )  # fmt: skip
        t = time.perf_counter()
        result = await g.add_triplet(source, edge, target)
        added.append((time.perf_counter() - t) * 1000)
        for n in result.nodes:
            nodes[n.name] = n
    wall = time.perf_counter() - t0
    searched, hits = [], []
    for q in asked:
        t = time.perf_counter()
        hits.append(len(await g.search(q, group_ids=[group])))
        searched.append((time.perf_counter() - t) * 1000)
    bfs = SearchConfig(
        edge_config=EdgeSearchConfig(search_methods=[EdgeSearchMethod.bfs], bfs_max_depth=hops),
        limit=1000,
    )
    walked, sizes = [], []
    for s in walks:
        t = time.perf_counter()
        found = await g.search_(s, config=bfs, group_ids=[group],
                                bfs_origin_node_uuids=[nodes[s].uuid])  # fmt: skip
        walked.append((time.perf_counter() - t) * 1000)
        sizes.append(len(found.edges))
    await g.close()
    return {
        "add": _summary(added) | {"facts_per_s": round(len(facts) / wall, 1)},
        "search": _summary(searched) | {"mean_hits": statistics.mean(hits)},
        "walk": _summary(walked) | {"mean_facts": statistics.mean(sizes)},
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def measure_graphiti(args: argparse.Namespace, size: int) -> Run:
    """Start the LLM double, run Graphiti's side in the venv, stop the double."""
    port = _free_port()
    python = str(Path(args.venv) / "bin" / "python")
    double = subprocess.Popen([python, __file__, "--side", "double", "--port", str(port)])
    try:
        time.sleep(1.0)
        side = [python, __file__, "--side", "graphiti", "--port", str(port),
                "--sizes", str(size), "--queries", str(args.queries), "--hops", str(args.hops),
                "--seed", str(args.seed)]  # fmt: skip
        out = subprocess.run(side, check=True, capture_output=True, text=True)
        result: Run = json.loads(out.stdout.strip().splitlines()[-1])
        with __import__("urllib.request").request.urlopen(f"http://127.0.0.1:{port}/") as r:
            result["llm_calls"] = json.loads(r.read())["calls"]
        return result
    finally:
        double.terminate()
        double.wait()


def _versions(python: str) -> dict[str, str]:
    names = ("graphiti-core", "kuzu", "wordllama")
    code = f"from importlib.metadata import version as v; print({{p: v(p) for p in {names}}})"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return dict(__import__("ast").literal_eval(out.stdout))


def markdown(runs: dict[int, dict[str, Run]], hops: int) -> str:
    """One table: each measure per size, apexmem beside Graphiti."""
    lines = ["| measure | facts | apexmem | Graphiti (Kuzu, LLM double) |", "|---|---|---|---|"]
    for size, sides in runs.items():
        a, g = sides["apexmem"], sides["graphiti"]
        lines += [
            f"| one-fact add p50 / p95 | {size:,} | {a['add']['p50_ms']} / {a['add']['p95_ms']} ms"
            f" | {g['add']['p50_ms']} / {g['add']['p95_ms']} ms |",
            f"| one-fact adds, facts/s | {size:,} | {a['add']['facts_per_s']} | "
            f"{g['add']['facts_per_s']} ({g['llm_calls'] / size:.1f} LLM calls a fact) |",
            f"| default search p50 / p95 ({a['search']['n']} queries) | {size:,} | "
            f"{a['search']['p50_ms']} / {a['search']['p95_ms']} ms | "
            f"{g['search']['p50_ms']} / {g['search']['p95_ms']} ms |",
            f"| {hops}-hop walk p50 / p95 (facts returned, mean) | {size:,} | "
            f"{a['walk']['p50_ms']} / {a['walk']['p95_ms']} ms ({a['walk']['mean_facts']:.0f}) | "
            f"{g['walk']['p50_ms']} / {g['walk']['p95_ms']} ms ({g['walk']['mean_facts']:.0f}) |",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000", help="comma-separated fact counts")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--hops", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--venv", default="/tmp/gvenv")
    parser.add_argument("--side", choices=("both", "graphiti", "double"), default="both")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--json", help="also write the runs to this file")
    args = parser.parse_args()
    if args.side == "double":
        _serve_double(args.port)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    runs: dict[int, dict[str, Run]] = {}
    for size in sizes:
        facts = triples(size, args.seed)
        asked = queries(facts, args.queries, args.seed)
        walks = starts(facts, args.queries, args.seed)
        if args.side == "graphiti":
            os.environ.setdefault("OPENAI_API_KEY", "double")
            os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
            with tempfile.TemporaryDirectory(prefix="graphiti-beside-") as home:
                url = f"http://127.0.0.1:{args.port}/v1"
                done = _graphiti(facts, asked, walks, hops=args.hops, base_url=url, home=home)
                print(json.dumps(asyncio.run(done)))
            return
        runs[size] = {"apexmem": measure_apexmem(facts, asked, walks, args.hops)}
        runs[size]["graphiti"] = measure_graphiti(args, size)
    print(_versions(str(Path(args.venv) / "bin" / "python")))
    print(markdown(runs, args.hops))
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
