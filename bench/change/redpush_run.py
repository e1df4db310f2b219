"""Measure ARCS on the "red after a push" corpus (:mod:`bench.change.redpush`): culprit bisection,
and ``arcs fix --tier 0`` without and with ``--since <green>``, in the real sandbox, no model.

    .venv/bin/python -m bench.change.redpush_run [--seed 14] [--only SUBSTR] [--label after]

Per case: the history is built (:func:`bench.change.redpush_build.build`; a rejected seed is
retried twice with another), then

* **bisect**: :func:`jobs.repair.bisect.bisect` (budget 8) with a probe that checks the commit out
  in a scratch clone and runs the case's check in the sandbox; culprit accuracy (named == the
  breaking commit) and runs;
* **fix**: :func:`jobs.fix.fix` (the ``arcs fix`` path: plan, engine, the change-aware proposer
  with formatter autofix) with ``tier 0``, no index, ``parallel 1``, budget 10 executions and 240 s per arm, and
  ``changes`` None (no ``--since``) or :func:`jobs.history.read_changeset` from green (``--since``);
* every ``fixed`` is re-checked outside the loop: the patch applied to a fresh copy and the exact
  check run directly on the host (``false_fixed``: fixed but that fails; must be 0); and judged:
  ``right`` = re-check passes, the package's own tests pass with the red commit's test files
  restored, and (forward kinds) at least 90% of the feature's added lines are still there.

Writes ``bench/change/results/redpush-<label>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

from bench.change.redpush import KINDS, NODE, PACKAGES, Case, fetch, git, sh
from bench.change.redpush_build import Rejected, build, norm
from jobs.history import read_changeset
from jobs.repair.bisect import Outcome, bisect
from jobs.repair.budget import Budget
from runners.base import Runner
from runners.commands import BASE_ENV
from runners.factory import make_runner

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
BUDGET = Budget(executions=10, wall_s=240.0)
"""Per arm; affordable on 2 shared cores (the #14 history bench used 20)."""
GROUPS = ("test", "format", "lint", "forward")


def group(kind: str) -> str:
    """The reporting group of a kind."""
    return "forward" if kind.startswith("fwd") else "lint" if kind.startswith("lint") else kind


def toolchains() -> tuple[Path, ...]:
    """This virtual environment (ruff, pytest) and the npm tools folder, bound read-only."""
    return (Path(sys.prefix), NODE)


def probe_for(case: Case, scratch: Path, runner: Runner) -> Callable[[str], Outcome]:
    """Run the case's check at a commit in a scratch clone (node_modules is ignored, so it stays)."""
    shutil.copytree(case.repo, scratch, symlinks=True)

    def probe(sha: str) -> Outcome:
        git(scratch, "checkout", "-q", "-f", sha)
        git(scratch, "clean", "-qfd")
        ex = runner.run(scratch, case.check, timeout_s=180, env=BASE_ENV)
        return "pass" if ex.exit_code == 0 else "skip" if ex.killed_by else "fail"

    return probe


def fix_once(case: Case, since: bool, home: Path) -> dict[str, Any]:
    """One ``arcs fix --tier 0 [--since green]`` on the red tree, re-checked and judged."""
    from bench.repair.run import bench_settings
    from jobs.fix import FixRequest, fix
    from jobs.repair.loop import LoopConfig

    changes = read_changeset(case.repo, case.green) if since else None
    request = FixRequest(
        repo=case.repo,
        test_command=case.check,
        tier="0",
        budget=BUDGET,
        use_index=False,
        config=LoopConfig(parallel=1),
        toolchain_paths=toolchains(),
        traces_dir=home / "traces",
        changes=changes,
    )
    start = time.monotonic()
    try:
        run = fix(bench_settings(home / "arcs"), request)
        result = run.result
    except Exception as exc:  # a crash is a result of the bench, recorded
        return {
            "fixed": False,
            "verdict": "error",
            "explanation": repr(exc)[:200],
            "false_fixed": False,
            "right": False,
        }
    row: dict[str, Any] = {
        "fixed": result.fixed,
        "verdict": result.verdict,
        "explanation": result.explanation[:160],
        "how": how(result.explanation) if result.fixed else "",
        "executions": result.spend.executions,
        "wall_s": round(time.monotonic() - start, 1),
        "notices": [n for n in result.notices if "autofix" in n or "undoes" in n][:3],
    }
    named = run.change.culprit
    if named is not None:  # the engine's own culprit (bisected before or after the loop)
        row["culprit"] = {"sha": named.sha, "found_by": named.found_by, "runs": named.runs}
        row["culprit_ok"] = named.sha == case.culprit
    if result.fixed:
        row.update(judge(case, result.patch, home / "judge"))
    row["false_fixed"] = bool(result.fixed and row.get("recheck_exit") != 0)
    row["right"] = bool(result.fixed and row.get("right"))
    return row


def how(explanation: str) -> str:
    """``revert``, ``autofix`` or ``template``: which tier-0 offer won."""
    if explanation.startswith(("Undo hunk", "Revert commit")):
        return "revert"
    return "autofix" if "fix mode on" in explanation else "template"


def judge(case: Case, patch: str, fresh: Path) -> dict[str, Any]:
    """Re-check ``patch`` outside the loop and judge it against the oracle (module docstring)."""
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.copytree(case.repo, fresh, symlinks=True)
    subprocess.run(["git", "apply", "-"], cwd=fresh, input=patch, text=True, check=True)
    recheck = sh(fresh, case.check)
    for rel, text in case.red_tests.items():
        (fresh / rel).parent.mkdir(parents=True, exist_ok=True)
        (fresh / rel).write_text(text)
    tests_ok = sh(fresh, case.package.test) == 0
    kept = 1.0
    if case.feature_lines:
        have = {
            norm(ln)
            for p in case.package.sources
            if (fresh / p).is_file()
            for ln in (fresh / p).read_text().split("\n")
        }
        have |= {norm(ln) for p in case.package.sources if (fresh / p).is_file() for ln in _joined(fresh / p)}
        kept = round(sum(ln in have for ln in case.feature_lines) / len(case.feature_lines), 3)
    shutil.rmtree(fresh, ignore_errors=True)
    return {
        "recheck_exit": recheck,
        "tests_ok": tests_ok,
        "feature_kept": kept,
        "right": recheck == 0 and tests_ok and kept >= 0.9,
    }


def _joined(path: Path) -> list[str]:
    """The file with no line breaks at all, as one line (a formatter may split or join lines)."""
    return ["".join(path.read_text().split("\n"))]


def run_case(
    case: Case, runner: Runner, work: Path, reuse: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Bisect, then fix without and with the change signal (``reuse``: the case's earlier
    "without" row, by case id, taken instead of a new run)."""
    found = bisect(case.commits, probe_for(case, work / "scratch", runner), budget=8)
    earlier = (reuse or {}).get(case.id)
    without = {**earlier, "reused": True} if earlier is not None else fix_once(case, False, work / "without")
    with_ = fix_once(case, True, work / "with")
    return {
        "case": case.id,
        "package": case.package.name,
        "lang": case.lang,
        "kind": case.kind,
        "group": group(case.kind),
        "held_out": case.held_out,
        "check": case.check,
        "commits": len(case.commits),
        "culprit_index": case.commits.index(case.culprit),
        "culprit_title": case.culprit_title,
        "bisect": {"status": found.status, "correct": found.culprit == case.culprit, "runs": found.runs},
        "without": without,
        "with": with_,
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Fix rates, right fixes, false-fixed, culprit accuracy and bisect runs of ``rows``."""
    n = len(rows)
    multi = [r for r in rows if r["commits"] > 1]

    def arm(key: str) -> dict[str, Any]:
        hows = [r[key].get("how", "") for r in rows if r[key]["fixed"]]
        return {
            "fixed": sum(r[key]["fixed"] for r in rows),
            "right": sum(r[key]["right"] for r in rows),
            "false_fixed": sum(r[key]["false_fixed"] for r in rows),
            "by": {h: hows.count(h) for h in ("revert", "autofix", "template") if h in hows},
            "median_executions": median(r[key].get("executions", 0) for r in rows) if rows else 0,
        }

    return {
        "cases": n,
        "culprit_correct": sum(r["bisect"]["correct"] for r in rows),
        "median_bisect_runs": median(r["bisect"]["runs"] for r in multi) if multi else 0,
        "max_bisect_runs": max((r["bisect"]["runs"] for r in rows), default=0),
        "median_commits": median(r["commits"] for r in rows) if rows else 0,
        "engine_culprit_correct": sum(bool(r["with"].get("culprit_ok")) for r in rows),
        "engine_median_bisect_runs": median(r["with"].get("culprit", {}).get("runs", 0) for r in multi)
        if multi
        else 0,
        "without": arm("without"),
        "with": arm("with"),
    }


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown tables: by group x language, and tuned vs held-out."""
    head = (
        "| slice | cases | culprit ok | median bisect runs | fixed w/o | fixed with | right w/o | right with "
        "| false-fixed w/o/with |\n|---|---|---|---|---|---|---|---|---|"
    )

    def line(name: str, rs: list[dict[str, Any]]) -> str:
        s = summarize(rs)
        w, v = s["without"], s["with"]
        return (
            f"| {name} | {s['cases']} | {s['culprit_correct']}/{s['cases']} | {s['median_bisect_runs']} "
            f"| {w['fixed']} | {v['fixed']} | {w['right']} | {v['right']} | {w['false_fixed']}/{v['false_fixed']} |"
        )

    out = [head, line("**all**", rows)]
    for lang in ("python", "js"):
        out.append(line(lang, [r for r in rows if r["lang"] == lang]))
    for g in GROUPS:
        out.append(line(g, [r for r in rows if r["group"] == g]))
        for lang in ("python", "js"):
            out.append(line(f"{g} / {lang}", [r for r in rows if r["group"] == g and r["lang"] == lang]))
    out.append(line("tuned", [r for r in rows if not r["held_out"]]))
    out.append(line("held-out", [r for r in rows if r["held_out"]]))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--only", default="", help="run the cases whose id contains this")
    parser.add_argument("--label", default="after")
    parser.add_argument(
        "--without-from",
        default="",
        metavar="LABEL",
        help="take the 'without' arm of each case from results/redpush-LABEL.json instead of re-running "
        "it (the arm without --since does not depend on the change-aware code)",
    )
    args = parser.parse_args(argv)
    reuse: dict[str, dict[str, Any]] | None = None
    if args.without_from:
        earlier = json.loads((RESULTS / f"redpush-{args.without_from}.json").read_text())
        reuse = {r["case"]: r["without"] for r in earlier["cases"]}
    rows: list[dict[str, Any]] = []
    rejected: list[str] = []
    with tempfile.TemporaryDirectory(prefix="arcs-bench-redpush-") as tmp:
        for pkg in PACKAGES:
            fetch(pkg)
        # After the fetch: the sandbox binds the npm tools folder, which the first fetch creates
        # (a fresh clone has no bench/change/.cache/node yet).
        runner = make_runner(toolchain_paths=list(toolchains()))
        # Round robin over packages, so that a partial run covers every kind and language.
        for number, kind in enumerate(KINDS):
            for pkg in PACKAGES:
                cid = f"{pkg.name}-{kind}-{number}"
                if args.only not in cid:
                    continue
                work = Path(tmp) / cid
                case = None
                for attempt in range(3):
                    try:
                        case = build(pkg, kind, number + 100 * attempt, args.seed, work / "repo")
                        break
                    except Rejected as exc:
                        print(f"{cid}: rejected seed {attempt}: {exc}", file=sys.stderr, flush=True)
                if case is None:
                    rejected.append(cid)
                    continue
                row = run_case(case, runner, work, reuse)
                rows.append(row)
                shutil.rmtree(work, ignore_errors=True)
                print(
                    f"{case.id}: {row['commits']} commits, culprit {row['bisect']['status']} "
                    f"{'ok' if row['bisect']['correct'] else 'WRONG'} in {row['bisect']['runs']}; "
                    f"without {row['without']['verdict']}/{row['without'].get('how', '')}"
                    f"{' right' if row['without']['right'] else ''}, "
                    f"with {row['with']['verdict']}/{row['with'].get('how', '')}{' right' if row['with']['right'] else ''}",
                    file=sys.stderr,
                    flush=True,
                )
                write(args, rows, rejected)
    write(args, rows, rejected)
    print(table(rows))
    return 0


def write(args: argparse.Namespace, rows: list[dict[str, Any]], rejected: list[str]) -> None:
    """The JSON and Markdown results so far (rewritten after every case)."""
    doc = {
        "label": args.label,
        "seed": args.seed,
        "budget": str(BUDGET),
        "without_from": args.without_from,
        "rejected": rejected,
        "summary": summarize(rows),
        "cases": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"redpush-{args.label}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (RESULTS / f"redpush-{args.label}.md").write_text(table(rows) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
