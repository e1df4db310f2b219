"""One measured configuration of the real-tree benchmark, in its own process (see ``real.py``).

``python bench/indexing/real_child.py --code-root ROOT --tree PATH --embedder E --mode M --out FILE``

Run as a script, with ``--code-root`` put first on ``sys.path`` so the *indexing* code measured is
the one under ROOT (the current tree, or a read-only worktree of an older commit for the BEFORE
numbers); the module checks that the imports really come from there. Only the public API that the
old code already had is used (``RepoIndex.open/refresh/retriever``, ``search``), plus ``fill`` and
the ``ARCS_INDEX_MODE`` setting when the code has them.

Steps, on a private copy of the tree with a fresh ``ARCS_HOME`` (cold embedding cache, cold model):
open + first refresh (``index_s``), the first query (``ttfq_s`` counts from before opening the index:
model load, indexing and the first answer), ``--queries`` distinct queries never seen (cold) and the
same again (warm: query vector cached), a one-file and a ten-file committed edit with a refresh each, the on-disk size of ``ARCS_HOME``, the peak RSS, and
``arcs search --no-refresh`` from a fresh process (cold process) a few times.

Lazy mode runs twice on fresh homes: first index + first query + 10 queries before any fill
(``lazy_cold_query``: they embed what they need), then index + the whole fill with no query in between
(``full_s = index + fill``), after which the cold/warm queries and refreshes are measured as above.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}
_SOURCE_SUFFIXES = (".py", ".ts", ".js", ".go", ".rs")


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **_GIT_ENV}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * pct / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _lat(samples: list[float]) -> dict[str, float]:
    ms = [1000 * s for s in samples]
    return {
        "n": len(ms),
        "p50_ms": round(_percentile(ms, 50), 2),
        "p95_ms": round(_percentile(ms, 95), 2),
        "max_ms": round(max(ms), 2),
    }


def _du(path: Path) -> int:
    """Bytes under ``path``, without exported ONNX graphs (one per machine, not per index)."""
    total = 0
    for p in path.rglob("*"):
        if p.is_file() and not p.is_symlink() and p.parent.name != "onnx":
            total += p.stat().st_size
    return total


def source_files(root: Path) -> list[str]:
    """Indexable source files (tracked by git), sorted: what queries and edits are drawn from."""
    listed = _git(root, "ls-files").split("\n")
    return sorted(
        p for p in listed if p.endswith(_SOURCE_SUFFIXES) and "/dist/" not in f"/{p}" and "test" not in p
    )


def build_queries(root: Path, n: int, seed: int) -> list[tuple[str, tuple[tuple[str, int], ...]]]:
    """``n`` distinct queries over random functions: issue-like texts and tracebacks with a hint."""
    from indexing.chunker import chunk_file

    rng = random.Random(seed)
    files = source_files(root)
    rng.shuffle(files)
    out: list[tuple[str, tuple[tuple[str, int], ...]]] = []
    for rel in files:
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        chunks = [c for c in chunk_file(rel, text).chunks if c.kind in ("function", "method")]
        if not chunks:
            continue
        chunk = rng.choice(chunks)
        words = chunk.symbol.replace("_", " ")
        if len(out) % 2 == 0:
            q = (
                f"{words} returns the wrong result\n\nWhen I call {chunk.symbol} with an empty value it "
                f"raises instead of returning an empty result. Seen since the last release."
            )
            out.append((q, ()))
        else:
            line = (chunk.start_line + chunk.end_line) // 2
            src = chunk.text.splitlines()
            q = (
                "Traceback (most recent call last):\n"
                f'  File "/home/runner/work/app/app/{rel}", line {line}, in {chunk.symbol}\n'
                f"    {src[min(len(src) - 1, line - chunk.start_line)].strip()}\n"
                f"KeyError: '{rng.choice(('amount', 'status', 'owner', 'region'))}'"
            )
            out.append((q, ((rel, line),)))
        if len(out) >= n:
            break
    return out


def edit_files(root: Path, count: int, rng: random.Random) -> list[str]:
    """Append a small function to ``count`` deterministic source files and commit; returns them."""
    files = source_files(root)
    chosen = rng.sample(files, min(count, len(files)))
    for rel in chosen:
        n = rng.randrange(100_000)
        if rel.endswith(".py"):
            add = f"\n\ndef bench_added_{n}(values):\n    return sum(v * {n} for v in values)\n"
        else:
            add = f"\n\nexport function benchAdded{n}(values: number[]): number {{\n  return values.length * {n};\n}}\n"
        with (root / rel).open("a", encoding="utf-8") as fh:
            fh.write(add)
    _git(root, "commit", "-qam", f"edit {len(chosen)} files")
    return chosen


def main() -> int:
    """Run one configuration and write its JSON result."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--code-root", type=Path, required=True)
    parser.add_argument("--tree", type=Path, required=True)
    parser.add_argument("--embedder", required=True)
    parser.add_argument("--mode", default="eager")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--cli-runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--graph-cache",
        type=Path,
        default=None,
        help="a folder of exported ONNX graphs copied into the fresh home first (the one-time export "
        "is measured apart)",
    )
    args = parser.parse_args()

    code_root = args.code_root.resolve()
    sys.path.insert(0, str(code_root))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, str(args.threads))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    import indexing.index as index_mod
    from bot.settings import load_settings
    from indexing.model import Location, Query

    imported_from = Path(index_mod.__file__).resolve()
    if not imported_from.is_relative_to(code_root):
        raise SystemExit(f"indexing imported from {imported_from}, not from {code_root}")
    result: dict[str, Any] = {
        "embedder": args.embedder,
        "mode": args.mode,
        "code_root": str(code_root),
        "indexing_module": str(imported_from),
    }
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="arcs-bench-real-") as tmp_name:
        tmp = Path(tmp_name)
        work = tmp / "repo"
        shutil.copytree(args.tree, work, symlinks=True)
        env = {
            "ARCS_HOME": str(tmp / "home"),
            "ARCS_EMBEDDER": args.embedder,
            "ARCS_INDEX_MODE": args.mode,
        }
        settings = load_settings(env)
        if args.graph_cache is not None and args.graph_cache.is_dir():
            shutil.copytree(args.graph_cache, settings.cache_dir / "onnx")
        queries = build_queries(work, args.queries + 1, args.seed)
        first, rest = queries[0], queries[1:]

        def ask(retriever: Any, q: tuple[str, tuple[tuple[str, int], ...]]) -> float:
            started = time.perf_counter()
            retriever.search(Query(text=q[0], k=10, hints=tuple(Location(p, n) for p, n in q[1])))
            return time.perf_counter() - started

        lazy = args.mode == "lazy" and hasattr(index_mod.RepoIndex, "fill")
        if lazy:
            # Phase A (its own home): what a user waits for -- index, then the first answer -- and
            # queries before the fill (each embeds what it needs). Phase B below times the full
            # fill without queries in between.
            first_settings = load_settings({**env, "ARCS_HOME": str(tmp / "home-first")})
            if args.graph_cache is not None and args.graph_cache.is_dir():
                shutil.copytree(args.graph_cache, first_settings.cache_dir / "onnx")
            t0 = time.perf_counter()
            with index_mod.RepoIndex.open(first_settings, work) as index:
                stats = index.refresh()
                result["index_s"] = round(time.perf_counter() - t0, 3)
                result["embedded_at_index"] = stats.embedded
                retriever = index.retriever()
                ask(retriever, first)
                result["ttfq_s"] = round(time.perf_counter() - t0, 3)
                result["lazy_cold_query"] = _lat([ask(retriever, q) for q in rest[:10]])
            shutil.rmtree(tmp / "home-first")
        t0 = time.perf_counter()
        with index_mod.RepoIndex.open(settings, work) as index:
            stats = index.refresh()
            index_s = round(time.perf_counter() - t0, 3)
            result["files"] = stats.files
            result["chunks"] = stats.chunks
            if lazy:
                started = time.perf_counter()
                done = index.fill()
                result["fill_s"] = round(time.perf_counter() - started, 3)
                result["fill"] = done.as_dict()
                result["full_s"] = round(index_s + result["fill_s"], 3)
            else:
                result["index_s"] = result["full_s"] = index_s
                result["embedded_at_index"] = stats.embedded
            retriever = index.retriever()
            if not lazy:
                ask(retriever, first)
                result["ttfq_s"] = round(time.perf_counter() - t0, 3)
            cold = [ask(retriever, q) for q in rest]
            warm = [ask(retriever, q) for q in rest]
            result["cold_query"] = _lat(cold)
            result["warm_query"] = _lat(warm)
            for label, count in (("one_file_refresh", 1), ("ten_file_refresh", 10)):
                edit_files(work, count, rng)
                started = time.perf_counter()
                st = index.refresh()
                result[f"{label}_s"] = round(time.perf_counter() - started, 3)
                result[f"{label}_embedded"] = st.embedded
        result["disk_mb"] = round(_du(tmp / "home") / 2**20, 1)
        result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        # `arcs search` from a fresh process on the warm index (no refresh): the CLI's cold start.
        launcher = (
            "import sys; sys.path.insert(0, sys.argv.pop(1)); from bot.cli import main; sys.exit(main())"
        )
        cli: list[float] = []
        for text, _ in rest[: args.cli_runs]:
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", launcher, str(code_root), "search", str(work), text, "--no-refresh"],
                env={**os.environ, **env},
                check=True,
                capture_output=True,
            )
            cli.append(time.perf_counter() - started)
        result["cli_search_cold_process"] = _lat(cli) if cli else None
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, dict)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
