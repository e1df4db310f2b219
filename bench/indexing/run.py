"""Indexing benchmark: build time, incremental refresh, query latency and memory.

``python -m bench.indexing.run [--lines 50000] [--latency-chunks 20000] [--queries 200] [--threads 2]``

Phases (all in a temporary folder, nothing is left behind):

1. **Generate** a ~50k-line multi-language git repository with :mod:`bench.indexing.generate`
   (renamed clones of the localization corpus + seeded synthetic Python/TypeScript/Go modules).
2. **Full index, cold cache**: ``RepoIndex.refresh()`` with the real MiniLM embedder on ``--threads``
   CPU threads. The model is loaded before the clock starts (its load time is reported apart).
   Time is attributed to chunking, embedding (the model only, cache look-ups excluded), sparse
   vectors, Qdrant upserts/deletes, file abstracts and the directory tree; the rest (discovery, git,
   hashing, manifest, cache I/O) is "other".
3. **No-op refresh** (nothing changed), **one-file refresh** after a committed edit of one Python
   file, and the same for an uncommitted (dirty) edit.
4. **Full rebuild, warm cache**: ``refresh(full=True)``: every chunk is re-chunked and re-upserted
   but all embeddings come from the cache.
5. **Query latency at ~20k chunks**: a second, larger repository from the same generator is indexed
   with *synthetic document vectors* (the feature-hashing embedder, 384-d, same dimension as MiniLM)
   so that the benchmark does not spend ~20 minutes embedding 20k chunks on 2 cores; queries are
   then embedded with the real MiniLM model. Latency depends on the number and dimension of stored
   vectors and on the query path, not on the vectors' values, so the numbers are those of a real
   20k-chunk MiniLM index (the rankings are not, and are not measured here). ``--real-latency-index``
   embeds the documents with MiniLM instead. Four query sets: hybrid with a cold query embedding
   (distinct texts, model call included), the same texts again (query vector served by the cache:
   retrieval only), hybrid with traceback hints, and hierarchical (depth 3).
6. **Peak RSS**: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` after the 50k phases and at the end.

Writes ``bench/results/indexing.json`` and prints a markdown table with the targets.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    RESULTS_DIR,
    git,
    init_git_repo,
    machine_info,
    markdown_table,
    peak_rss_mb,
    percentile,
    prepare_process,
    today,
    update_results_md,
)
from bench.indexing.generate import generate_repo

TARGETS = {
    "full_index_50k_lines_s": 60.0,
    "one_file_refresh_s": 1.0,
    "query_p95_ms_20k_chunks": 50.0,
}


class TimedEmbedder:
    """Wraps an embedder and accumulates the time and number of texts it is asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.dim: int = inner.dim
        self.seconds = 0.0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> Any:
        """Delegate, timing the call."""
        started = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - started
            self.texts += len(texts)


class SyntheticDocsEmbedder:
    """Hash vectors while ``synthetic`` is set (bulk indexing), the real model afterwards (queries).

    Only for the latency phase; see the module docstring.
    """

    def __init__(self, real: Any, fake: Any) -> None:
        self.real = real
        self.fake = fake
        self.name = f"{real.name}+bench-synthetic-docs"
        self.dim: int = real.dim
        self.synthetic = True

    def embed(self, texts: Sequence[str]) -> Any:
        """Embed with the fake or the real model depending on the phase."""
        return (self.fake if self.synthetic else self.real).embed(texts)


class PhaseTimer:
    """Attributes refresh time to the index's building blocks by wrapping them."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """A timed version of ``fn``."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[phase] += time.perf_counter() - started
                self.calls[phase] += 1

        return timed

    def reset(self) -> None:
        """Forget what was measured so far."""
        self.seconds.clear()
        self.calls.clear()


@contextmanager
def instrument(idx: Any, timer: PhaseTimer) -> Iterator[None]:
    """Time chunking, sparse vectors, abstracts, the tree and store writes of ``idx``'s refreshes."""
    import indexing.index as index_mod

    module_patches = {
        "chunk_file": "chunking",
        "document_vector": "sparse vectors",
        "build_tree": "directory tree",
    }
    saved_module = {name: getattr(index_mod, name) for name in module_patches}
    for name, phase in module_patches.items():
        setattr(index_mod, name, timer.wrap(phase, saved_module[name]))
    store_methods = ("upsert", "delete_ids", "delete_paths", "recreate")
    for name in store_methods:
        setattr(idx.store, name, timer.wrap("qdrant writes", getattr(idx.store, name)))
    idx.summarizer.summarize = timer.wrap("file abstracts", idx.summarizer.summarize)
    try:
        yield
    finally:
        for name, fn in saved_module.items():
            setattr(index_mod, name, fn)
        for name in (*store_methods, "summarize"):
            target = idx.summarizer if name == "summarize" else idx.store
            target.__dict__.pop(name, None)


def breakdown(total: float, timer: PhaseTimer, embed_seconds: float) -> dict[str, float]:
    """Seconds per phase; the embedding model's time is carved out of whatever phase called it."""
    parts = {k: round(v, 3) for k, v in sorted(timer.seconds.items())}
    parts["embedding (model)"] = round(embed_seconds, 3)
    # build_tree calls the summarizer for directories; the tree upserts happen in qdrant writes.
    parts["other"] = round(max(0.0, total - sum(timer.seconds.values()) - embed_seconds), 3)
    return parts


def edit_one_file(root: Path, rng: random.Random) -> str:
    """Append a small function to one deterministic Python file; returns its path."""
    candidates = sorted(p for p in root.rglob("*.py") if "/gen/" in p.as_posix()) or sorted(
        root.rglob("*.py")
    )
    target = candidates[rng.randrange(len(candidates))]
    with target.open("a", encoding="utf-8") as fh:
        n = rng.randrange(10_000)
        fh.write(
            f"\n\ndef bench_added_{n}(values: list[int]) -> int:\n    return sum(v * {n} for v in values)\n"
        )
    return target.relative_to(root).as_posix()


def refresh_row(label: str, stats: Any, seconds: float) -> dict[str, Any]:
    """One measured refresh."""
    return {
        "phase": label,
        "seconds": round(seconds, 3),
        "files": stats.files,
        "chunks": stats.chunks,
        "changed_files": stats.changed_files,
        "embedded": stats.embedded,
        "cached": stats.cached,
        "full": stats.full,
    }


def build_queries(root: Path, n: int, seed: int) -> list[tuple[str, tuple[tuple[str, int], ...]]]:
    """``n`` distinct query texts over random functions of the repository; half carry hints.

    Issue-like texts name a function in words; traceback-like texts are a CPython traceback through
    the function with a ``(path, line)`` hint, as the bot would send for a failing test.
    """
    from indexing.chunker import chunk_file

    rng = random.Random(seed)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".py", ".ts", ".go", ".rs"))
    rng.shuffle(files)
    queries: list[tuple[str, tuple[tuple[str, int], ...]]] = []
    seen: set[str] = set()
    for path in files:
        rel = path.relative_to(root).as_posix()
        chunks = [
            c
            for c in chunk_file(rel, path.read_text(encoding="utf-8")).chunks
            if c.kind in ("function", "method")
        ]
        if not chunks:
            continue
        chunk = rng.choice(chunks)
        words = chunk.symbol.replace("_", " ")
        if len(queries) % 2 == 0:
            text = (
                f"{words} returns the wrong result\n\nWhen I call {chunk.symbol} with an empty list it "
                f"raises instead of returning an empty result. Seen in {rel} since the last release."
            )
            hints: tuple[tuple[str, int], ...] = ()
        else:
            line = (chunk.start_line + chunk.end_line) // 2
            text = (
                "Traceback (most recent call last):\n"
                f'  File "/home/runner/work/app/app/{rel}", line {line}, in {chunk.symbol}\n'
                f"    {chunk.text.splitlines()[min(len(chunk.text.splitlines()) - 1, line - chunk.start_line)].strip()}\n"
                f"KeyError: '{rng.choice(('amount', 'status', 'owner', 'region'))}'"
            )
            hints = ((rel, line),)
        if text not in seen:
            seen.add(text)
            queries.append((text, hints))
        if len(queries) >= n:
            break
    return queries


def latency_stats(samples: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean/max in milliseconds."""
    ms = [1000 * s for s in samples]
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 2),
        "p95_ms": round(percentile(ms, 95), 2),
        "mean_ms": round(float(np.mean(ms)), 2),
        "max_ms": round(max(ms), 2),
    }


def measure_queries(
    retriever: Any, queries: Sequence[tuple[str, tuple[tuple[str, int], ...]]], how: str
) -> list[float]:
    """Wall time of each query (``how``: hybrid, hybrid+hints, hier)."""
    from indexing.model import Location, Query

    out: list[float] = []
    for text, hints in queries:
        locs = tuple(Location(p, line) for p, line in hints) if how != "hybrid" else ()
        started = time.perf_counter()
        if how == "hier":
            retriever.hierarchical(Query(text=text, k=10, hints=locs), depth=3)
        else:
            retriever.search(Query(text=text, k=10, hints=locs))
        out.append(time.perf_counter() - started)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run every phase, write ``bench/results/indexing.json`` and print the tables."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=50_000, help="size of the indexed repository")
    parser.add_argument("--latency-chunks", type=int, default=20_000, help="chunks in the latency index")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--real-latency-index", action="store_true", help="embed the latency index with MiniLM"
    )
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="default: bench/results/indexing.json")
    parser.add_argument(
        "--write-results-md",
        action="store_true",
        help="replace the generated block of '## Indexing' in RESULTS.md",
    )
    args = parser.parse_args(argv)
    prepare_process(args.threads)

    from bot.settings import load_settings
    from indexing.embed import CachedEmbedder, HashEmbedder, MiniLMEmbedder
    from indexing.index import RepoIndex

    report: dict[str, Any] = {
        "benchmark": "indexing",
        "date": today(),
        "command": " ".join(["python -m bench.indexing.run", *(sys.argv[1:] if argv is None else argv)]),
        "machine": machine_info(),
        "load_average_start": list(os.getloadavg()),
        "targets": TARGETS,
    }
    rng = random.Random(args.seed)
    run_started = time.perf_counter()
    minilm = MiniLMEmbedder()
    started = time.perf_counter()
    minilm.embed(["warm up"])
    report["model_load_s"] = round(time.perf_counter() - started, 2)
    print(f"model loaded in {report['model_load_s']}s")

    with tempfile.TemporaryDirectory(prefix="arcs-bench-idx-") as tmp_name:
        tmp = Path(tmp_name)
        # -- 1. generate ------------------------------------------------------------------------
        started = time.perf_counter()
        gen = generate_repo(tmp / "repo50k", target_lines=args.lines, seed=args.seed)
        init_git_repo(gen.root)
        report["repo"] = {
            "files": gen.files,
            "lines": gen.lines,
            "clone_lines": gen.clone_lines,
            "synthetic_lines": gen.synthetic_lines,
            "corpus_clones": gen.clones,
            "generate_s": round(time.perf_counter() - started, 2),
        }
        print(f"generated {gen.files} files, {gen.lines} lines")

        settings = load_settings({"ARCS_HOME": str(tmp / "home"), "ARCS_EMBEDDER": "minilm"})
        timed = TimedEmbedder(minilm)
        cached = CachedEmbedder(timed, settings.cache_dir / "embeddings.sqlite3")
        refreshes: list[dict[str, Any]] = []
        timer = PhaseTimer()
        try:
            with (
                RepoIndex.open(settings, gen.root, embedder=cached, repo_id="bench-50k") as idx,
                instrument(idx, timer),
            ):
                # -- 2. full index, cold cache ----------------------------------------------------
                started = time.perf_counter()
                stats = idx.refresh()
                seconds = time.perf_counter() - started
                row = refresh_row("full index, cold cache", stats, seconds)
                row["breakdown_s"] = breakdown(seconds, timer, timed.seconds)
                row["embedded_texts_incl_tree"] = timed.texts
                row["chunks_per_s_embedding"] = (
                    round(timed.texts / timed.seconds, 1) if timed.seconds else None
                )
                refreshes.append(row)
                print(f"full index: {seconds:.1f}s, {stats.chunks} chunks; breakdown {row['breakdown_s']}")

                # -- 3. no-op, committed one-file edit, dirty one-file edit -----------------------
                for label, commit in (("no-op refresh", None), ("one-file refresh (committed)", True),
                                      ("one-file refresh (uncommitted edit)", False)):  # fmt: skip
                    if commit is not None:
                        rel = edit_one_file(gen.root, rng)
                        if commit:
                            git(gen.root, "commit", "-qam", f"edit {rel}")
                    timer.reset()
                    timed.seconds = 0.0
                    timed.texts = 0
                    started = time.perf_counter()
                    stats = idx.refresh()
                    seconds = time.perf_counter() - started
                    row = refresh_row(label, stats, seconds)
                    row["breakdown_s"] = breakdown(seconds, timer, timed.seconds)
                    refreshes.append(row)
                    print(
                        f"{label}: {seconds:.2f}s (changed {stats.changed_files}, embedded {stats.embedded})"
                    )

                # -- 4. full rebuild, warm cache --------------------------------------------------
                timer.reset()
                timed.seconds = 0.0
                started = time.perf_counter()
                stats = idx.refresh(full=True)
                seconds = time.perf_counter() - started
                row = refresh_row("full rebuild, warm cache", stats, seconds)
                row["breakdown_s"] = breakdown(seconds, timer, timed.seconds)
                refreshes.append(row)
                print(f"warm full rebuild: {seconds:.1f}s (embedded {stats.embedded}, cached {stats.cached})")
        finally:
            cached.close()
        report["refreshes"] = refreshes
        report["peak_rss_mb_after_50k"] = round(peak_rss_mb(), 1)

        # -- 5. query latency at ~20k chunks ------------------------------------------------------
        if not args.skip_latency:
            full = refreshes[0]
            lines_per_chunk = gen.lines / max(1, full["chunks"])
            target_lines = int(args.latency_chunks * lines_per_chunk * 1.02)
            big = generate_repo(tmp / "repo-latency", target_lines=target_lines, seed=args.seed + 1)
            init_git_repo(big.root)
            lat_settings = load_settings({"ARCS_HOME": str(tmp / "home-latency"), "ARCS_EMBEDDER": "minilm"})
            doc_embedder: Any = (
                minilm if args.real_latency_index else SyntheticDocsEmbedder(minilm, HashEmbedder(minilm.dim))
            )
            with RepoIndex.open(
                lat_settings, big.root, embedder=doc_embedder, repo_id="bench-latency"
            ) as idx:
                started = time.perf_counter()
                stats = idx.refresh()
                build_s = time.perf_counter() - started
                print(f"latency index: {stats.chunks} chunks from {big.lines} lines in {build_s:.1f}s")
                if isinstance(doc_embedder, SyntheticDocsEmbedder):
                    doc_embedder.synthetic = False
                retriever = idx.retriever()
                queries = build_queries(big.root, args.queries, args.seed)
                with_hints = [q for q in queries if q[1]]
                sets = {
                    "hybrid, cold query embedding": measure_queries(retriever, queries, "hybrid"),
                    "hybrid, cached query embedding": measure_queries(retriever, queries, "hybrid"),
                    "hybrid + hints (traceback queries, cached embedding)": measure_queries(
                        retriever, with_hints, "hybrid+hints"
                    ),
                    "hierarchical depth 3 (cached embedding)": measure_queries(retriever, queries, "hier"),
                }
            query_embed = []
            for text, _ in queries[:50]:
                started = time.perf_counter()
                minilm.embed([text + " (timing)"])
                query_embed.append(time.perf_counter() - started)
            report["latency"] = {
                "index": {
                    "chunks": stats.chunks,
                    "files": stats.files,
                    "lines": big.lines,
                    "build_s": round(build_s, 1),
                    "document_vectors": "MiniLM"
                    if args.real_latency_index
                    else "synthetic (feature hashing, 384-d)",
                },
                "queries": {name: latency_stats(samples) for name, samples in sets.items()},
                "minilm_query_embedding": latency_stats(query_embed),
            }
    report["peak_rss_mb"] = round(peak_rss_mb(), 1)
    report["seconds_total"] = round(time.perf_counter() - run_started, 1)
    report["load_average_end"] = list(os.getloadavg())

    full_s = refreshes[0]["seconds"]
    one_file = refreshes[2]["seconds"]
    results = {
        "full_index_50k_lines_s": full_s,
        "one_file_refresh_s": one_file,
    }
    if "latency" in report:
        results["query_p95_ms_20k_chunks"] = report["latency"]["queries"]["hybrid, cold query embedding"][
            "p95_ms"
        ]
    report["results"] = {
        name: {"target": TARGETS[name], "measured": value, "met": value <= TARGETS[name]}
        for name, value in results.items()
    }
    out = args.out or RESULTS_DIR / "indexing.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():  # keep what the real-tree and thread benchmarks stored in the same file
        previous = json.loads(out.read_text(encoding="utf-8"))
        report = {**{k: previous[k] for k in ("real_trees", "threads") if k in previous}, **report}
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print()
    print(render_tables(report))
    if args.write_results_md:
        update_results_md("Indexing", "indexing", render_tables(report))
        print("updated bench/RESULTS.md (## Indexing)")
    print(f"\nwrote {out}")
    return 0


def render_tables(report: dict[str, Any]) -> str:
    """The markdown tables printed at the end and pasted into RESULTS.md."""
    repo = report["repo"]
    m = report["machine"]
    load = f"{report['load_average_start'][0]:.1f} -> {report['load_average_end'][0]:.1f}"
    parts = [
        f"Run {report['date']}: `{report['command']}`; {m['cpu']}, {m['cpus_available']} CPUs, torch threads "
        f"{m.get('torch_threads')}, CPU only, real MiniLM (all-MiniLM-L6-v2, 128 tokens); 1-min load average "
        f"{load} (other jobs shared the machine); whole run {report['seconds_total']} s.",
        "",
        f"Repository: {repo['files']} files, {repo['lines']} lines "
        f"({repo['clone_lines']} from {repo['corpus_clones']} renamed corpus clones, {repo['synthetic_lines']} synthetic); "
        f"model load {report['model_load_s']} s (not included below).",
        "",
    ]
    rows = [
        [r["phase"], r["seconds"], r["changed_files"], r["chunks"], r["embedded"], r["cached"]]
        for r in report["refreshes"]
    ]
    parts.append(
        markdown_table(["refresh", "seconds", "changed files", "chunks", "embedded", "cached"], rows)
    )
    full = report["refreshes"][0]
    parts += ["", "Where the cold full index spends its time:", ""]
    total = full["seconds"]
    rows = [
        [k, v, f"{100 * v / total:.0f}%"]
        for k, v in sorted(full["breakdown_s"].items(), key=lambda kv: -kv[1])
    ]
    parts.append(markdown_table(["phase", "seconds", "share"], rows))
    if "latency" in report:
        lat = report["latency"]
        parts += [
            "",
            f"Query latency over {lat['index']['chunks']} chunks ({lat['index']['files']} files; document vectors: "
            f"{lat['index']['document_vectors']}; index built in {lat['index']['build_s']} s):",
            "",
        ]
        rows = [
            [name, s["n"], s["p50_ms"], s["p95_ms"], s["mean_ms"], s["max_ms"]]
            for name, s in lat["queries"].items()
        ]
        q = lat["minilm_query_embedding"]
        rows.append(
            ["(MiniLM query embedding alone)", q["n"], q["p50_ms"], q["p95_ms"], q["mean_ms"], q["max_ms"]]
        )
        parts.append(markdown_table(["query set", "n", "p50 ms", "p95 ms", "mean ms", "max ms"], rows))
    parts += [
        "",
        f"Peak RSS: {report['peak_rss_mb_after_50k']} MiB after the 50k phases, {report['peak_rss_mb']} MiB at the end.",
        "",
    ]
    rows = [
        [name, res["target"], res["measured"], "yes" if res["met"] else "NO"]
        for name, res in report["results"].items()
    ]
    parts.append(markdown_table(["target", "goal", "measured", "met"], rows))
    return "\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
