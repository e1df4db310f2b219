"""Localization benchmark: does the index find the function that must change?

``python -m bench.localization.run [--embedder minilm|hash] [--k 10] [--only ID ...]``

Each corpus repository (``repos/<name>``) is copied to a temporary folder, committed as a git
repository and indexed with :class:`indexing.index.RepoIndex` (the real MiniLM embedder by default).
Every case of ``cases.jsonl`` is then searched in several modes:

============  ==================================================================================
dense         ``Query(mode="dense")``, no hints
sparse        ``Query(mode="sparse")``, no hints
hybrid        ``Query(mode="hybrid")``, no hints
hybrid+hints  hybrid with the case's ``hints`` (innermost frame first; issues have none, so for
              them this equals ``hybrid``)
hier          ``retriever.hierarchical(Query(...), depth=3)``, no hints
hier+hints    hierarchical with hints
============  ==================================================================================

A hit counts when ``hit.chunk.path == expected.path`` and the chunk is a function/method whose
``qualified_name`` equals ``expected.symbol`` or ends with ``"." + expected.symbol`` (``::`` is read
as ``.``, so ``Transaction.balance`` matches ``src.journal.Transaction.balance``). A class chunk
that merely contains the method does not count for the main metrics; the lenient "encl." metric
also accepts any chunk of the expected file whose lines enclose the whole function (e.g. the class
chunk), since it shows the model the same code. The file-level metric only needs the path.

Metrics per mode and case kind: recall@1/@5/@10 (share of cases with a hit at rank <= k) and MRR
(mean of 1/rank of the first hit within the top ``k``, 0 when none). Results go to
``bench/results/localization.json``; a markdown table is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import (
    RESULTS_DIR,
    copy_as_git_repo,
    machine_info,
    markdown_table,
    peak_rss_mb,
    prepare_process,
    today,
    update_results_md,
)
from bench.localization.corpus import CASES_FILE, REPOS_DIR, Case, load_cases

MODES: tuple[str, ...] = ("dense", "sparse", "hybrid", "hybrid+hints", "hier", "hier+hints")
KINDS: tuple[str, ...] = ("all", "traceback", "ci_log", "stack", "issue")
"""``stack`` = traceback + ci_log (every case whose text carries file:line frames)."""
CUTOFFS: tuple[int, ...] = (1, 5, 10)
TARGET_RECALL5_TRACEBACK = 0.9


def _norm(name: str) -> str:
    return name.replace("::", ".")


def symbol_matches(chunk: Any, path: str, symbol: str) -> bool:
    """Whether ``chunk`` is the expected function (see the module docstring for the rule)."""
    if chunk.path != path or chunk.kind not in ("function", "method"):
        return False
    qualified = _norm(chunk.qualified_name or chunk.symbol)
    want = _norm(symbol)
    return qualified == want or qualified.endswith("." + want)


@dataclass
class CaseResult:
    """Ranks (1-based, None = not in the top k) of one case in one mode."""

    case_id: str
    repo: str
    kind: str
    mode: str
    rank: int | None
    file_rank: int | None
    enclosing_rank: int | None
    seconds: float
    top: list[str]


def rank_hits(hits: Sequence[Any], case: Case, span: tuple[int, int] | None) -> tuple[int | None, ...]:
    """(function rank, file rank, enclosing-chunk rank) of a case's hits; see the module docstring."""
    start, end = span or (0, -1)

    def is_function(chunk: Any) -> bool:
        return symbol_matches(chunk, case.expected_path, case.expected_symbol)

    def in_file(chunk: Any) -> bool:
        return bool(chunk.path == case.expected_path)

    def encloses(chunk: Any) -> bool:
        return bool(chunk.path == case.expected_path and chunk.start_line <= start and chunk.end_line >= end)

    return first_rank(hits, is_function), first_rank(hits, in_file), first_rank(hits, encloses)


def first_rank(hits: Sequence[Any], pred: Callable[[Any], bool]) -> int | None:
    """1-based rank of the first hit satisfying ``pred``."""
    for i, hit in enumerate(hits, start=1):
        if pred(hit.chunk):
            return i
    return None


def run_mode(retriever: Any, case: Case, mode: str, k: int) -> tuple[list[Any], float]:
    """Run one case in one mode; returns the hits and the wall time of the call."""
    from indexing.model import Location, Query

    use_hints = mode.endswith("+hints")
    hints = tuple(Location(p, line) for p, line in case.hints) if use_hints else ()
    base = mode.removesuffix("+hints")
    started = time.perf_counter()
    if base == "hier":
        hits = retriever.hierarchical(Query(text=case.query, k=k, mode="hybrid", hints=hints), depth=3)
    else:
        hits = retriever.search(Query(text=case.query, k=k, mode=base, hints=hints))  # type: ignore[arg-type]
    return list(hits)[:k], time.perf_counter() - started


def aggregate(results: Sequence[CaseResult], k: int) -> dict[str, dict[str, dict[str, float]]]:
    """``{mode: {kind: {n, r@1, r@5, r@10, mrr, file@5, mean_ms}}}``."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for mode in MODES:
        out[mode] = {}
        for kind in KINDS:
            rows = [
                r
                for r in results
                if r.mode == mode
                and (
                    kind == "all" or r.kind == kind or (kind == "stack" and r.kind in ("traceback", "ci_log"))
                )
            ]
            if not rows:
                continue
            n = len(rows)
            stats: dict[str, float] = {"n": n}
            for cutoff in CUTOFFS:
                stats[f"r@{cutoff}"] = sum(1 for r in rows if r.rank is not None and r.rank <= cutoff) / n
            stats["mrr"] = sum(1 / r.rank for r in rows if r.rank is not None and r.rank <= k) / n
            stats["file@5"] = sum(1 for r in rows if r.file_rank is not None and r.file_rank <= 5) / n
            stats["encl@5"] = (
                sum(1 for r in rows if r.enclosing_rank is not None and r.enclosing_rank <= 5) / n
            )
            stats["mean_ms"] = 1000 * sum(r.seconds for r in rows) / n
            out[mode][kind] = stats
    return out


def expected_span(case: Case) -> tuple[int, int] | None:
    """Line range of the chunk that counts as a hit (None: the chunker yields no such chunk)."""
    from indexing.chunker import chunk_file

    text = (REPOS_DIR / case.repo / case.expected_path).read_text(encoding="utf-8")
    for c in chunk_file(case.expected_path, text).chunks:
        if symbol_matches(c, case.expected_path, case.expected_symbol):
            return c.start_line, c.end_line
    return None


def render_tables(summary: dict[str, dict[str, dict[str, float]]], k: int) -> str:
    """The markdown tables printed at the end and pasted into RESULTS.md."""
    rows = []
    for mode in MODES:
        s = summary[mode]["all"]
        rows.append(
            [
                mode,
                int(s["n"]),
                s["r@1"],
                s["r@5"],
                s["r@10"],
                s["mrr"],
                s["encl@5"],
                s["file@5"],
                round(s["mean_ms"], 1),
            ]
        )
    overall = markdown_table(
        ["mode", "cases", "R@1", "R@5", "R@10", f"MRR@{k}", "encl. R@5", "file R@5", "ms/query"], rows
    )
    kinds = [kd for kd in KINDS if kd != "all"]
    rows = []
    for mode in MODES:
        row: list[object] = [mode]
        for kd in kinds:
            kind_stats = summary[mode].get(kd)
            row += [kind_stats["r@5"], kind_stats["mrr"]] if kind_stats else ["-", "-"]
        rows.append(row)
    headers = ["mode"]
    for kd in kinds:
        n = int(summary["hybrid"][kd]["n"]) if kd in summary["hybrid"] else 0
        headers += [f"{kd} R@5 (n={n})", f"{kd} MRR"]
    per_kind = markdown_table(headers, rows)
    return f"All cases:\n\n{overall}\n\nBy case kind (stack = traceback + ci_log):\n\n{per_kind}"


def main(argv: list[str] | None = None) -> int:
    """Index the corpus repositories, run every case in every mode, write and print the results."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedder", choices=("onnx", "onnx-int8", "minilm", "hash"), default="minilm")
    parser.add_argument(
        "--mode", choices=("eager", "lazy"), default="eager", help="index mode (lazy: bodies on demand)"
    )
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    parser.add_argument("--max-tokens", type=int, default=128, help="model token window (default 128)")
    parser.add_argument("--only", nargs="*", default=None, help="run only these case ids")
    parser.add_argument("--cases", type=Path, default=CASES_FILE)
    parser.add_argument("--out", type=Path, default=None, help="default: bench/results/localization.json")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case's ranks and top hits")
    parser.add_argument(
        "--write-results-md",
        action="store_true",
        help="replace the generated block of '## Localization' in RESULTS.md",
    )
    args = parser.parse_args(argv)
    prepare_process(args.threads)

    from bot.settings import load_settings
    from indexing.index import RepoIndex
    from indexing.registry import make_embedder

    load_start = list(os.getloadavg())
    cases = load_cases(args.cases)
    if args.only:
        cases = [c for c in cases if c.id in set(args.only)]
    spans = {c.id: expected_span(c) for c in cases}
    unreachable = [cid for cid, span in spans.items() if span is None]
    repos = sorted({c.repo for c in cases})
    results: list[CaseResult] = []
    index_stats: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="arcs-bench-loc-") as tmp:
        settings = load_settings(
            {
                "ARCS_HOME": str(Path(tmp) / "home"),
                "ARCS_EMBEDDER": args.embedder,
                "ARCS_INDEX_MODE": args.mode,
                "ARCS_EMBED_THREADS": str(args.threads),
                "ARCS_EMBED_MAX_TOKENS": str(args.max_tokens),
            }
        )
        embedder = make_embedder(settings)  # one model load for all repositories
        try:
            for repo in repos:
                work = Path(tmp) / "repos" / repo
                copy_as_git_repo(REPOS_DIR / repo, work)
                with RepoIndex.open(settings, work, embedder=embedder, repo_id=f"bench-{repo}") as idx:
                    stats = idx.refresh()
                    index_stats[repo] = {
                        "files": stats.files,
                        "chunks": stats.chunks,
                        "embedded": stats.embedded,
                        "deferred": getattr(stats, "deferred", 0),
                        "seconds": round(stats.seconds, 3),
                    }
                    print(
                        f"indexed {repo}: {stats.files} files, {stats.chunks} chunks in {stats.seconds:.1f}s"
                    )
                    retriever = idx.retriever()
                    for case in (c for c in cases if c.repo == repo):
                        for mode in MODES:
                            hits, seconds = run_mode(retriever, case, mode, args.k)
                            rank, file_rank, enclosing_rank = rank_hits(hits, case, spans[case.id])
                            top = [f"{h.chunk.path}::{h.chunk.qualified_name}" for h in hits[:5]]
                            results.append(
                                CaseResult(
                                    case.id,
                                    repo,
                                    case.kind,
                                    mode,
                                    rank,
                                    file_rank,
                                    enclosing_rank,
                                    seconds,
                                    top,
                                )
                            )
                            if args.verbose:
                                print(
                                    f"  {case.id:28} {mode:13} rank={rank} file_rank={file_rank} top={top[:2]}"
                                )
        finally:
            embedder.close()
    total = time.perf_counter() - started

    summary = aggregate(results, args.k)
    stack = summary["hybrid+hints"].get("traceback", {}).get("r@5")
    report: dict[str, Any] = {
        "benchmark": "localization",
        "date": today(),
        "command": " ".join(["python -m bench.localization.run", *(sys.argv[1:] if argv is None else argv)]),
        "embedder": args.embedder,
        "mode": args.mode,
        "max_tokens": args.max_tokens,
        "k": args.k,
        "machine": machine_info(),
        "threads": args.threads,
        "corpus": {
            "cases": len(cases),
            "repos": repos,
            "by_kind": {kd: sum(1 for c in cases if c.kind == kd) for kd in ("traceback", "ci_log", "issue")},
            "unreachable_cases": unreachable,
        },
        "index": index_stats,
        "seconds_total": round(total, 1),
        "load_average_start": load_start,
        "load_average_end": list(os.getloadavg()),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "summary": summary,
        "target": {
            "metric": "hybrid+hints recall@5 on traceback cases",
            "goal": TARGET_RECALL5_TRACEBACK,
            "measured": stack,
            "met": stack is not None and stack >= TARGET_RECALL5_TRACEBACK,
        },
        "cases": [r.__dict__ for r in results],
    }
    out = args.out or RESULTS_DIR / "localization.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")

    print()
    print(render_report(report))
    if unreachable:
        print(f"WARNING: no chunk can match the expected symbol of: {', '.join(unreachable)}")
    if args.write_results_md:
        update_results_md("Localization", "localization", render_report(report))
        print("updated bench/RESULTS.md (## Localization)")
    print(f"wrote {out}")
    return 0


def render_report(report: dict[str, Any]) -> str:
    """Context line, tables, target verdict and misses: the generated part of RESULTS.md."""
    m = report["machine"]
    corpus = report["corpus"]
    kinds = ", ".join(f"{n} {kd}" for kd, n in corpus["by_kind"].items())
    load = f"{report['load_average_start'][0]:.1f} -> {report['load_average_end'][0]:.1f}"
    head = (
        f"Run {report['date']}: `{report['command']}`, embedder {report['embedder']}, "
        f"index mode {report.get('mode', 'eager')}, k={report['k']}; "
        f"{m['cpu']}, {m['cpus_available']} CPUs, torch threads {report['threads']}, CPU only, "
        f"1-min load average {load} (other jobs shared the machine). {corpus['cases']} cases ({kinds}) over "
        f"{len(corpus['repos'])} repositories; indexing + all queries took {report['seconds_total']} s, "
        f"peak RSS {report['peak_rss_mb']} MiB."
    )
    target = report["target"]
    verdict = "met" if target["met"] else "**not met**"
    misses = sorted(
        {
            r["case_id"]
            for r in report["cases"]
            if r["mode"] == "hybrid+hints" and (r["rank"] is None or r["rank"] > 5)
        }
    )
    return (
        f"{head}\n\n{render_tables(report['summary'], report['k'])}\n\n"
        f"Target {target['metric']} >= {target['goal']}: measured {target['measured']:.2f}, {verdict}.\n\n"
        f"hybrid+hints misses at k=5 ({len(misses)}): {', '.join(misses) or '-'}."
    )


if __name__ == "__main__":
    sys.exit(main())
