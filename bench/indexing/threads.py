"""Embedding throughput by thread count, on a quiet machine and with both cores busy.

``python -m bench.indexing.threads [--texts 128] [--queries 20] [--embedders onnx,minilm]``

For each embedder and intra-op thread count (1, 2), in a fresh process each: embed ``--texts`` real
code chunks (pydantic, from :mod:`bench.indexing.fetch`) in batches and ``--queries`` short queries
one at a time, first alone, then next to two CPU-burning processes (a worker host running test
suites). Prints texts/s and single-query p50/p95, and stores them under ``threads`` in
``bench/results/indexing.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, machine_info, markdown_table, percentile, today

_CHILD = r"""
import json, os, sys, time
from pathlib import Path
kind, threads, tree, n_texts, n_queries = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
                  OMP_NUM_THREADS=str(threads))
from indexing.chunker import chunk_file
from indexing.embed import embedding_text
from indexing.embedders import embedder_for
texts = []
for p in sorted((tree / "pydantic").rglob("*.py")):
    texts += [embedding_text(c) for c in chunk_file(p.relative_to(tree).as_posix(), p.read_text()).chunks]
    if len(texts) >= n_texts:
        break
texts = texts[:n_texts]
emb = embedder_for(kind, cache_dir=Path(sys.argv[6]), threads=threads)
t = time.perf_counter(); emb.embed(["warm up"]); load = time.perf_counter() - t
t = time.perf_counter(); emb.embed(texts); bulk = time.perf_counter() - t
single = []
for i in range(n_queries):
    t = time.perf_counter(); emb.embed([f"why does validate_{i} raise a KeyError for missing fields"]); single.append(time.perf_counter() - t)
print(json.dumps({"load_s": load, "texts_per_s": len(texts) / bulk, "single_s": single}))
"""


def measure(kind: str, threads: int, busy: bool, args: argparse.Namespace) -> dict[str, Any]:
    """One configuration in a fresh process."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 if busy else 0)]
    try:
        time.sleep(0.5 if busy else 0)
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _CHILD,
                kind,
                str(threads),
                str(args.tree),
                str(args.texts),
                str(args.queries),
                str(args.cache),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    finally:
        for p in burners:
            p.kill()
            p.wait()
    raw = json.loads(done.stdout.strip().splitlines()[-1])
    ms = [1000 * s for s in raw["single_s"]]
    return {
        "embedder": kind,
        "threads": threads,
        "busy": busy,
        "load_s": round(raw["load_s"], 2),
        "texts_per_s": round(raw["texts_per_s"], 1),
        "query_p50_ms": round(percentile(ms, 50), 1),
        "query_p95_ms": round(percentile(ms, 95), 1),
    }


def main(argv: list[str] | None = None) -> int:
    """Measure every combination, print the table, store the rows."""
    from bench.indexing.fetch import TREES, fetch

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--texts", type=int, default=128)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--embedders", default="onnx,minilm")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".arcs" / "cache")
    args = parser.parse_args(argv)
    args.tree = fetch(next(t for t in TREES if t.name == "pydantic"))
    rows = [
        measure(kind, threads, busy, args)
        for busy in (False, True)
        for kind in args.embedders.split(",")
        for threads in (1, 2)
    ]
    table = markdown_table(
        ["embedder", "threads", "cores busy", "texts/s", "query p50 ms", "query p95 ms"],
        [
            [
                r["embedder"],
                r["threads"],
                "yes" if r["busy"] else "no",
                r["texts_per_s"],
                r["query_p50_ms"],
                r["query_p95_ms"],
            ]
            for r in rows
        ],
    )
    print(table)
    out = RESULTS_DIR / "indexing.json"
    stored: dict[str, Any] = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    stored["threads"] = {"date": today(), "machine": machine_info(), "rows": rows}
    out.write_text(json.dumps(stored, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
