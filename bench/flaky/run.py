"""Measure the flaky corpus: ``arcs deflake``'s measurement on every case, then precision/recall.

``python -m bench.flaky.run --runs 10`` materializes each package (:mod:`bench.flaky.corpus`),
runs :func:`jobs.deflake.measure` on every case in ARCS' bubblewrap sandbox and writes the raw
outcomes and the scores to ``bench/flaky/results.json`` and ``results.md``. The plan of orders is
prefix-stable, so the first k runs of an N-run measurement are what ``--runs k`` would have run:
detection (a test is called flaky when it both failed and passed) and the cause are scored at
every k. The held-out split (ordered-set) is reported apart.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.flaky.corpus import CASES, HERE, TARGETS, materialize
from jobs.deflake import measure
from jobs.repair.flaky_cause import classify
from runners.commands import resolve_test_command
from runners.factory import make_runner
from runners.toolchains import toolchain_paths

FLAKY = {"order-dependence", "randomness", "time", "concurrency", "network", "resource"}


def _one(case: dict[str, Any], repo: Path, runs: int) -> dict[str, Any]:
    runner = make_runner(toolchain_paths=toolchain_paths([]))
    resolved = resolve_test_command(repo, explicit="python -m pytest")
    t = time.monotonic()
    m = measure(runner, repo, resolved, case["test"], runs, seed=7, timeout_s=120)
    rows = [
        {
            "order": o.order.kind,
            "tests": list(o.order.tests),
            "hash_seed": o.order.hash_seed,
            "after": o.order.after,
            "outcome": o.outcome,
            "type": o.type,
            "message": o.message[:2000],
        }
        for o in m.observed
    ]
    print(f"{case['id']}: {m.diagnosis.cause} {m.diagnosis.failures}/{m.diagnosis.runs}", file=sys.stderr)
    return {**case, "seconds": round(time.monotonic() - t, 1), "observed": rows, "m": m}


def score(results: list[dict[str, Any]], k: int) -> dict[str, Any]:
    """Detection precision/recall and cause accuracy from the first ``k`` runs of each case."""
    tp = fp = fn = tn = right = 0
    for r in results:
        d = classify(r["test"], r["m"].observed[:k], r["m"].source)
        said = d.cause in FLAKY or d.cause == "unknown"
        said = said and 0 < d.failures < d.runs
        truth = r["label"] in FLAKY
        tp += said and truth
        fp += said and not truth
        fn += truth and not said
        tn += not said and not truth
        right += said and truth and d.cause == r["label"]
    return {
        "runs": k,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "cause_right": right,
        "cause_accuracy_of_flaky": round(right / (tp + fn), 3) if tp + fn else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--work", type=Path, default=Path("/tmp/arcs-flaky-corpus"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--label", default="", help="results_<label>.json/.md instead of results.json/.md")
    args = ap.parse_args()
    cases = json.loads(CASES.read_text(encoding="utf-8"))
    repos = {t.package.name: materialize(t.package.name, args.work / t.package.name) for t in TARGETS}
    t0 = time.monotonic()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda c: _one(c, repos[c["package"]], args.runs), cases))
    wall = time.monotonic() - t0
    scores: dict[str, list[dict[str, Any]]] = {}
    for split in ("dev", "held-out", "all"):
        part = [r for r in results if split in ("all", r["split"])]
        scores[split] = [score(part, k) for k in range(2, args.runs + 1)]
    per_case = [
        {k: v for k, v in r.items() if k != "m"}
        | {
            "cause": r["m"].diagnosis.cause,
            "failures": r["m"].diagnosis.failures,
            "polluter": r["m"].diagnosis.polluter,
        }
        for r in results
    ]
    out = {"runs": args.runs, "wall_s": round(wall, 1), "scores": scores, "cases": per_case}
    (HERE / f"results{'_' + args.label if args.label else ''}.json").write_text(
        json.dumps(out, indent=1) + "\n", encoding="utf-8"
    )
    lines = [f"# Flaky corpus: {len(results)} cases, {args.runs} runs each, {wall:.0f} s wall", ""]
    for split, rows in scores.items():
        lines += [
            f"## {split}",
            "",
            "| runs | P | R | cause right / flaky | tp fp fn tn |",
            "| --: | --: | --: | --: | :-- |",
        ]
        lines += [
            f"| {s['runs']} | {s['precision']} | {s['recall']} | {s['cause_right']}/{s['tp'] + s['fn']} | "
            f"{s['tp']} {s['fp']} {s['fn']} {s['tn']} |"
            for s in rows
        ]
        lines.append("")
    lines += [
        "## Cases (at the full run count)",
        "",
        "| case | split | label | said | failed/runs | polluter |",
        "| :-- | :-- | :-- | :-- | --: | :-- |",
    ]
    lines += [
        f"| {c['id']} | {c['split']} | {c['label']} | {c['cause']} | {c['failures']}/{len(c['observed'])} | {c['polluter'] or ''} |"
        for c in per_case
    ]
    (HERE / f"results{'_' + args.label if args.label else ''}.md").write_text(
        "\n".join(lines) + "\n", encoding="utf-8"
    )
    print("\n".join(lines[: 4 + 3 * (args.runs + 5)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
