"""One process of the query-latency benchmark (see ``latency.py``), run against one code root.

``python bench/indexing/latency_child.py build   --code-root ROOT --repo REPO --home HOME``
``python bench/indexing/latency_child.py measure --code-root ROOT --repo REPO --home HOME
    --embedder {hash,onnx} --queries FILE --out FILE [--profile FILE]``

Run as a script with ``--code-root`` first on ``sys.path`` so the ``indexing`` code measured is the
one under ROOT (the current tree, or a read-only worktree of the base commit); the module checks
that the imports really come from there. Only public API the base code already has is used.

``build`` indexes REPO eagerly with the hash embedder (document vectors: feature hashing, 384-d,
the dimension of MiniLM; latency depends on the number and size of the vectors, not their values).

``measure`` opens that index in a running process with a *fresh, private* embedding cache, asks two
warm-up queries that are not timed (the process is "already running": the store is loaded, the
model is loaded), then every query of FILE once (cold: never seen by this process, the query
embedding is computed) and again (warm: the query vector comes from the cache). With ``--embedder
onnx`` the queries are embedded by all-MiniLM-L6-v2 through ONNX Runtime (the default embedder),
with ``hash`` by the hash embedder (the yardstick: retrieval alone). The ranked hits of every query
(flat ``search`` and ``hierarchical``) are written too, so two code roots can be compared hit by hit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_WARMUP = (
    ("warm up: the index answers a first question", ()),
    ("Traceback: warm up with a hint", (("", 1),)),
)


def _hits(hits: Any) -> list[list[Any]]:
    return [
        [h.chunk.path, h.chunk.start_line, h.chunk.end_line, round(h.score, 9), list(h.reasons)] for h in hits
    ]


def _open(args: argparse.Namespace) -> tuple[Any, Any]:
    import indexing.index as index_mod
    from bot.settings import load_settings

    imported_from = Path(index_mod.__file__).resolve()
    if not imported_from.is_relative_to(args.code_root.resolve()):
        raise SystemExit(f"indexing imported from {imported_from}, not from {args.code_root}")
    settings = load_settings(
        {"ARCS_HOME": str(args.home), "ARCS_EMBEDDER": "hash", "ARCS_INDEX_MODE": "eager"}
    )
    return index_mod, settings


def build(args: argparse.Namespace) -> dict[str, Any]:
    """Index the repository eagerly with the hash embedder."""
    index_mod, settings = _open(args)
    started = time.perf_counter()
    with index_mod.RepoIndex.open(settings, args.repo, repo_id="bench-latency", mode="eager") as idx:
        stats = idx.refresh()
    return {"chunks": stats.chunks, "files": stats.files, "build_s": round(time.perf_counter() - started, 1)}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Cold and warm query latency (seconds per query) and the ranked hits of every query."""
    index_mod, settings = _open(args)
    from indexing.embed import CachedEmbedder
    from indexing.embedders import embedder_for
    from indexing.model import Location, Query

    queries = json.loads(args.queries.read_text(encoding="utf-8"))
    inner = embedder_for(args.embedder, cache_dir=args.graph_cache, threads=args.threads)
    with tempfile.TemporaryDirectory(prefix="arcs-q-lat-") as tmp:
        cached = CachedEmbedder(inner, Path(tmp) / "embeddings.sqlite3")
        with index_mod.RepoIndex.open(
            settings, args.repo, embedder=cached, repo_id="bench-latency", mode="eager"
        ) as idx:
            retriever = idx.retriever()
            known = sorted(retriever.known_paths)

            def query(text: str, hints: Any) -> Any:
                locs = tuple(Location(p or known[0], n) for p, n in hints)
                return Query(text=text, k=10, hints=locs)

            for text, hints in _WARMUP:
                retriever.search(query(text, hints))
                retriever.hierarchical(query(text, hints), depth=3)
            profiler = None
            if args.profile is not None:
                import cProfile

                profiler = cProfile.Profile()
            timings: dict[str, list[float]] = {"cold": [], "warm": []}
            ranked: list[list[list[Any]]] = []
            for label in ("cold", "warm"):
                for text, hints in queries:
                    q = query(text, hints)
                    if profiler is not None:
                        profiler.enable()
                    started = time.perf_counter()
                    hits = retriever.search(q)
                    timings[label].append(time.perf_counter() - started)
                    if profiler is not None:
                        profiler.disable()
                    if label == "cold":
                        ranked.append(_hits(hits))
            hier = [_hits(retriever.hierarchical(query(t, h), depth=3)) for t, h in queries]
            if profiler is not None:
                profiler.dump_stats(str(args.profile))
        cached.close()
    return {"timings": timings, "search": ranked, "hierarchical": hier}


def main() -> int:
    """Parse the arguments, put the code root first on ``sys.path`` and run the step."""
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=("build", "measure"))
    parser.add_argument("--code-root", type=Path, required=True)
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--embedder", default="hash")
    parser.add_argument("--graph-cache", type=Path, default=Path(tempfile.gettempdir()) / "arcs-q-onnx")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    sys.path.insert(0, str(args.code_root.resolve()))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, str(args.threads))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    result = build(args) if args.step == "build" else measure(args)
    args.out.write_text(json.dumps(result) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
