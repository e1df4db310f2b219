"""Query latency at ~20k chunks, BEFORE vs AFTER code measured interleaved in one run (issue 13).

``python -m bench.indexing.latency --base-root /tmp/q-base [--after-root .] [--also LABEL=ROOT] [--rounds 4]``

1. Generate a repository of about ``--chunks`` chunks (:mod:`bench.indexing.generate`, fixed seed;
   ~186k lines, ~2.4k files for 20k chunks) and git-init it, under ``--work`` (kept between runs).
2. Index it eagerly with the hash embedder once per code root (``latency_child.py build``); the
   code roots are ``before`` (``--base-root``), ``after`` and any ``--also LABEL=ROOT`` (a variant).
3. ``--rounds`` rounds; each runs, per embedder (``onnx``: the default query embedder, ``hash``: the
   yardstick without a model) and per code root -- the order rotating between rounds -- one
   fresh process that measures ``--queries`` cold queries (never seen by the process; the first two
   untimed queries load the store and the model) and the same queries warm (query vector cached).
   Half the queries are issue-like texts, half tracebacks with a ``file:line`` hint, ``k`` = 10, as
   in ``real_child.py``.
4. The ranked hits of every query (flat and hierarchical) of each code root are compared with
   ``before``'s: the change must not alter a single result (paths, lines, scores, explanations).

Writes ``bench/indexing/results/query_latency.json``: per embedder and code root, p50/p95 of all
cold and all warm samples pooled over the rounds, the ratios to BEFORE, the onnx/hash ratios and
the per-round numbers. ``--profile`` also writes a cProfile of each configuration's last round.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, init_git_repo, machine_info, percentile, today
from bench.indexing.generate import generate_repo
from bench.indexing.run import build_queries

CHILD = Path(__file__).with_name("latency_child.py")
RESULTS = Path(__file__).with_name("results") / "query_latency.json"
LINES_PER_CHUNK = 9.3
"""Generated lines per chunk (measured: 20,433 chunks from ~190k lines)."""


def _child(step: str, code_root: Path, repo: Path, home: Path, out: Path, *extra: str) -> dict[str, Any]:
    cmd = [sys.executable, str(CHILD), step, "--code-root", str(code_root), "--repo", str(repo)]
    cmd += ["--home", str(home), "--out", str(out), *extra]
    subprocess.run(cmd, check=True, cwd=repo)
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return data


def _stats(samples: list[float]) -> dict[str, float]:
    ms = [1000 * s for s in samples]
    return {"n": len(ms), "p50_ms": round(percentile(ms, 50), 2), "p95_ms": round(percentile(ms, 95), 2)}


def _compare(a: list[Any], b: list[Any]) -> int:
    """How many queries ranked differently."""
    return sum(1 for x, y in zip(a, b, strict=True) if x != y)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and write the JSON results."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base-root", type=Path, required=True, help="worktree of the BEFORE code")
    parser.add_argument("--after-root", type=Path, default=REPO_ROOT)
    parser.add_argument("--also", action="append", default=[], help="LABEL=ROOT: another code root")
    parser.add_argument("--work", type=Path, default=Path("/tmp/arcs-q-latency"))
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--embedders", default="onnx,hash")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    repo = work / "repo"
    if not repo.exists():
        gen = generate_repo(repo, target_lines=int(args.chunks * LINES_PER_CHUNK), seed=args.seed)
        init_git_repo(repo)
        print(f"generated {gen.files} files, {gen.lines} lines", flush=True)
    qfile = work / f"queries-{args.queries}.json"
    if not qfile.exists():
        qfile.write_text(json.dumps(build_queries(repo, args.queries, args.seed)), encoding="utf-8")
    roots = {"before": args.base_root.resolve(), "after": args.after_root.resolve()}
    for spec in args.also:
        label, _, root = spec.partition("=")
        roots[label] = Path(root).resolve()
    built: dict[str, Any] = {}
    for label, root in roots.items():
        home = work / f"home-{label}"
        if not (home / "index").exists():
            built[label] = _child("build", root, repo, home, work / f"build-{label}.json")
        else:
            built[label] = json.loads((work / f"build-{label}.json").read_text(encoding="utf-8"))
        print(f"{label}: {built[label]}", flush=True)
    embedders = args.embedders.split(",")
    samples: dict[str, dict[str, dict[str, list[float]]]] = {
        e: {label: {"cold": [], "warm": []} for label in roots} for e in embedders
    }
    rounds: list[dict[str, Any]] = []
    rankings: dict[str, dict[str, Any]] = {e: {} for e in embedders}
    load: list[float] = [os.getloadavg()[0]]
    for rnd in range(args.rounds):
        labels = list(roots)
        shift = rnd % len(labels)
        order = labels[shift:] + labels[:shift]
        if rnd // len(labels) % 2:
            order.reverse()
        row: dict[str, Any] = {"round": rnd, "order": order}
        for emb in embedders:
            for label in order:
                extra = ["--embedder", emb, "--queries", str(qfile)]
                if args.profile and rnd == args.rounds - 1:
                    extra += ["--profile", str(work / f"profile-{emb}-{label}.prof")]
                res = _child(
                    "measure", roots[label], repo, work / f"home-{label}", work / "measure.json", *extra
                )
                for kind in ("cold", "warm"):
                    samples[emb][label][kind] += res["timings"][kind]
                    row[f"{emb}/{label}/{kind}"] = _stats(res["timings"][kind])
                rankings[emb].setdefault(
                    label, {"search": res["search"], "hierarchical": res["hierarchical"]}
                )
        load.append(os.getloadavg()[0])
        rounds.append(row)
        print(json.dumps(row), flush=True)

    summary: dict[str, Any] = {}
    for emb in embedders:
        for label in roots:
            for kind in ("cold", "warm"):
                summary[f"{emb}/{label}/{kind}"] = _stats(samples[emb][label][kind])
    ratios: dict[str, float] = {}
    for key, st in summary.items():
        emb, label, kind = key.split("/")
        if label != "before":
            base = summary[f"{emb}/before/{kind}"]
            for p in ("p50_ms", "p95_ms"):
                ratios[f"{emb}/{kind}/{p} {label}/before"] = round(st[p] / base[p], 3)
        if emb != "hash" and "hash" in embedders:
            ref = summary[f"hash/{label}/{kind}"]
            for p in ("p50_ms", "p95_ms"):
                ratios[f"{emb}/{label}/{kind}/{p} x hash"] = round(st[p] / ref[p], 3)
    differing = {
        emb: {
            f"{label}/{part}": _compare(rankings[emb]["before"][part], rankings[emb][label][part])
            for label in roots
            if label != "before"
            for part in ("search", "hierarchical")
        }
        for emb in embedders
    }
    report = {
        "date": today(),
        "machine": machine_info(),
        "command": "python -m bench.indexing.latency " + " ".join(argv if argv is not None else sys.argv[1:]),
        "index": built,
        "queries": args.queries,
        "rounds": args.rounds,
        "load_1min_per_round": [round(x, 2) for x in load],
        "summary": summary,
        "ratios": ratios,
        "rankings_differing": differing,
        "per_round": rounds,
        "seconds_total": round(time.perf_counter() - started, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({"summary": summary, "ratios": ratios, "rankings_differing": differing}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
