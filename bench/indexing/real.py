"""Indexing benchmark on real code trees, every number also a ratio to the hash-embedder run.

``python -m bench.indexing.real --label after [--trees requests,pydantic,rxjs,django]
[--configs hash:eager,onnx:eager,onnx:lazy] [--busy pydantic] [--code-root DIR] [--write-results-md]``

The trees come from :mod:`bench.indexing.fetch` (pinned source distributions; fetched when missing).
For each tree, each configuration ``EMBEDDER:MODE`` runs in its own process
(:mod:`bench.indexing.real_child`: cold model, cold caches, its own peak RSS), one after the other,
the hash run first: on a shared machine the load changes from minute to minute, so the hash run of
the same tree in the same run is the yardstick (``ratio = configuration / hash``). ``--busy TREE``
repeats that tree with two CPU-burning processes running beside it (both cores busy), hash run
included. ``--code-root`` measures another checkout's indexing code (a read-only ``git worktree`` of
an older commit gives the BEFORE numbers); the child verifies that its imports come from there.

Results are merged into ``bench/results/indexing.json`` under ``real_trees.<label>``; with
``--write-results-md`` the ``indexing-real`` block of ``## Indexing`` in RESULTS.md is regenerated
from every label stored there (BEFORE and AFTER side by side).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine_info, markdown_table, today, update_results_md
from bench.indexing.fetch import TREES, fetch

CHILD = Path(__file__).resolve().parent / "real_child.py"
RESULTS = RESULTS_DIR / "indexing.json"
RATIO_KEYS = (
    ("ttfq_s", "first query s"),
    ("full_s", "full index s"),
    ("one_file_refresh_s", "1-file refresh s"),
    ("ten_file_refresh_s", "10-file refresh s"),
    ("peak_rss_mb", "peak RSS MiB"),
    ("disk_mb", "disk MiB"),
)


def _burners(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` processes that burn one CPU each until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def export_graphs(code_root: Path, dest: Path) -> float | None:
    """Build the ONNX graphs once (fp32 and int8) into ``dest``; seconds taken, None without ONNX."""
    if not (code_root / "indexing" / "onnx_embed.py").exists():
        return None
    script = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
        "import indexing.onnx_embed as o; t = time.perf_counter(); "
        "args = (o.bundled_model_dir(),) if hasattr(o, 'bundled_model_dir') else (); "  # before #24: a folder
        "o.ensure_graph(Path(sys.argv[2]), *args, quantize=True); print(time.perf_counter() - t)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(code_root), str(dest)], check=True, capture_output=True, text=True
    )
    return round(float(done.stdout.strip().splitlines()[-1]), 2)


def run_config(
    code_root: Path,
    tree: Path,
    embedder: str,
    mode: str,
    *,
    queries: int,
    threads: int,
    graph_cache: Path | None = None,
) -> dict[str, Any]:
    """One configuration in a fresh process; its JSON result plus wall time and load."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = Path(fh.name)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        subprocess.run(
            [
                sys.executable,
                str(CHILD),
                "--code-root",
                str(code_root),
                "--tree",
                str(tree),
                "--embedder",
                embedder,
                "--mode",
                mode,
                "--queries",
                str(queries),
                "--threads",
                str(threads),
                "--out",
                str(out),
                *(["--graph-cache", str(graph_cache / "onnx")] if graph_cache is not None else []),
            ],
            check=True,
            cwd=tempfile.gettempdir(),  # not the repository: imports come from --code-root only
        )
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    finally:
        out.unlink(missing_ok=True)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    result["load_before"] = round(load, 2)
    return result


def with_ratios(runs: dict[str, dict[str, Any]]) -> None:
    """Add ``ratio`` (value / the hash run's value) to every non-hash run of one tree."""
    base = next((r for key, r in runs.items() if key.startswith("hash:")), None)
    if base is None:
        return
    for key, run in runs.items():
        if key.startswith("hash:"):
            continue
        ratios: dict[str, float] = {}
        for field, _ in RATIO_KEYS:
            if run.get(field) is not None and base.get(field):
                ratios[field] = round(run[field] / base[field], 2)
        for field in ("cold_query", "warm_query"):
            if run.get(field) and base.get(field) and base[field]["p95_ms"]:
                ratios[f"{field}_p95"] = round(run[field]["p95_ms"] / base[field]["p95_ms"], 2)
        run["ratio"] = ratios


def main(argv: list[str] | None = None) -> int:
    """Run the configurations over the trees and store the results."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--label", required=True, help="e.g. before / after")
    parser.add_argument("--code-root", type=Path, default=REPO_ROOT)
    parser.add_argument("--trees", default=",".join(t.name for t in TREES))
    parser.add_argument("--configs", default="hash:eager,onnx:eager,onnx:lazy")
    parser.add_argument("--busy", default="", help="trees to repeat with both cores busy")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--write-results-md", action="store_true")
    args = parser.parse_args(argv)

    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if not any(c.startswith("hash:") for c in configs):
        configs.insert(0, "hash:eager")
    configs.sort(key=lambda c: not c.startswith("hash:"))  # the yardstick first
    wanted = [t.strip() for t in args.trees.split(",") if t.strip()]
    busy = {t.strip() for t in args.busy.split(",") if t.strip()}
    by_name = {t.name: t for t in TREES}
    report: dict[str, Any] = {
        "date": today(),
        "command": " ".join(["python -m bench.indexing.real", *(sys.argv[1:] if argv is None else argv)]),
        "machine": machine_info(),
        "code_root": str(args.code_root.resolve()),
        "threads": args.threads,
        "trees": {},
    }
    graph_dir = Path(tempfile.mkdtemp(prefix="arcs-bench-graphs-"))
    report["onnx_export_s"] = export_graphs(args.code_root.resolve(), graph_dir)
    graph_cache = graph_dir if report["onnx_export_s"] is not None else None
    plan = [(name, False) for name in wanted] + [(name, True) for name in wanted if name in busy]
    for name, is_busy in plan:
        tree = by_name[name]
        path = fetch(tree)
        key = f"{name}+busy" if is_busy else name
        runs: dict[str, dict[str, Any]] = {}
        burners = _burners(2) if is_busy else []
        try:
            for config in configs:
                embedder, _, mode = config.partition(":")
                print(f"== {key} {config}", flush=True)
                runs[config] = run_config(
                    args.code_root,
                    path,
                    embedder,
                    mode or "eager",
                    queries=args.queries,
                    threads=args.threads,
                    graph_cache=graph_cache,
                )
        finally:
            for proc in burners:
                proc.kill()
                proc.wait()
        with_ratios(runs)
        report["trees"][key] = {
            "package": f"{tree.registry}:{tree.package}=={tree.version}",
            "size": tree.size,
            "busy": is_busy,
            "runs": runs,
        }
    shutil.rmtree(graph_dir, ignore_errors=True)
    stored: dict[str, Any] = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    previous = stored.setdefault("real_trees", {}).get(args.label)
    report["commands"] = [report["command"]]
    if previous is not None:  # a later run of the same label adds or replaces trees
        report["trees"] = {**previous.get("trees", {}), **report["trees"]}
        report["commands"] = [*previous.get("commands", [previous["command"]]), report["command"]]
    stored["real_trees"][args.label] = report
    RESULTS.write_text(json.dumps(stored, indent=1) + "\n", encoding="utf-8")
    text = render(stored["real_trees"])
    print(text)
    if args.write_results_md:
        update_results_md("Indexing", "indexing-real", text)
    return 0


def _fmt_lat(run: dict[str, Any], field: str) -> str:
    lat = run.get(field)
    return f"{lat['p50_ms']:.0f} / {lat['p95_ms']:.0f}" if lat else "-"


def render(labels: dict[str, Any]) -> str:
    """One table per label: every tree and configuration, absolute numbers and ratios to hash."""
    parts: list[str] = []
    for label, report in labels.items():
        m = report["machine"]
        commands = ", ".join(f"`{c}`" for c in report.get("commands", [report["command"]]))
        parts.append(
            f"**{label.upper()}** ({report['date']}; {commands}; {m['cpu']}, "
            f"{m['cpus_available']} CPUs, {report['threads']} threads):"
        )
        parts.append("")
        rows: list[list[object]] = []
        for tree_key, tree in report["trees"].items():
            for config, run in tree["runs"].items():
                ratio = run.get("ratio", {})

                def cell(field: str, run: dict[str, Any] = run, ratio: dict[str, float] = ratio) -> str:
                    value = run.get(field)
                    if value is None:
                        return "-"
                    return f"{value:g} ({ratio[field]:g}x)" if field in ratio else f"{value:g}"

                rows.append(
                    [
                        tree_key,
                        f"{run.get('files', '-')}f/{run.get('chunks', '-')}c",
                        config,
                        cell("ttfq_s"),
                        cell("full_s"),
                        cell("one_file_refresh_s"),
                        cell("ten_file_refresh_s"),
                        _fmt_lat(run, "lazy_cold_query"),
                        _fmt_lat(run, "cold_query"),
                        _fmt_lat(run, "warm_query"),
                        _fmt_lat(run, "cli_search_cold_process"),
                        cell("peak_rss_mb"),
                        cell("disk_mb"),
                        run.get("load_before", "-"),
                    ]
                )
        parts.append(
            markdown_table(
                [
                    "tree",
                    "size",
                    "embedder:mode",
                    "first query s (x hash)",
                    "full index s (x hash)",
                    "1-file refresh s",
                    "10-file refresh s",
                    "lazy: queries before fill p50/p95 ms",
                    "cold query p50/p95 ms",
                    "warm query p50/p95 ms",
                    "`arcs search` new process p50/p95 ms",
                    "peak RSS MiB",
                    "disk MiB",
                    "load",
                ],
                rows,
            )
        )
        parts.append("")
    return "\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
