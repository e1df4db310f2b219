"""Red after a push, on outside code: culprit bisection and tier 0 with and without the change signal.

    .venv/bin/python -m bench.change.history [--seed 14] [--limit 30] [--label after]

For every case of the outside corpus (``bench/outside/cases``: a pinned PyPI sdist and one seeded
mutation its own tests detect), a history is built: the clean sdist committed as the last green
commit, then ``k`` commits (``k`` seeded in 1..8). One of them (seeded position) applies the
case's mutation (the culprit); the others are harmless: a comment line inserted before a seeded
top-level definition of one of the package's source files (often the culprit's own file, so
ranking has to pick the right hunk). Authors are seeded from a small list.

Then, in the real sandbox (bubblewrap, this virtual environment as the toolchain):

* **bisect**: :func:`jobs.repair.bisect.bisect` with a probe that checks the commit out in a
  scratch clone and runs the case's test command (exit 0 pass, 1 fail, else skip), budget 8;
  culprit accuracy and runs;
* **tier 0 without the change signal**: the repair loop with the template proposer
  (what ``arcs fix --tier 0`` does today);
* **tier 0 with it**: the same loop behind :class:`jobs.repair.tier0.change_aware.ChangeAwareProposer`
  with the :class:`~jobs.repair.changes.ChangeSet` from green to red (reverts offered first,
  ranked by the reproduced failures' frames).

Every ``fixed`` is re-checked outside the loop (the patch applied to a fresh copy, the exact test
command run directly): ``false_fixed`` must be 0. Writes ``bench/change/results/history-<label>.json``.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

from bench.change.redpush import git
from bench.outside.corpus import materialize
from bench.repair.isolate import direct_env
from jobs.history import read_changeset
from jobs.repair.bisect import Outcome, bisect
from jobs.repair.budget import Budget
from jobs.repair.changes import ChangeSet
from jobs.repair.loop import LoopConfig, RepairLoop
from jobs.repair.ports import Proposer
from jobs.repair.task import RepairTask
from jobs.repair.tier0.change_aware import ChangeAwareProposer
from jobs.repair.tier0.templates import TemplateProposer
from jobs.sandbox_workbench import SandboxWorkbench, SystemClock
from runners.base import Runner
from runners.commands import BASE_ENV, resolve_test_command
from runners.factory import make_runner

HERE = Path(__file__).resolve().parent
CASES = HERE.parent / "outside" / "cases"
RESULTS = HERE / "results"
AUTHORS = ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov")
BUDGET = Budget(executions=20, wall_s=400.0)


def harmless(repo: Path, files: list[str], rng: random.Random, n: int) -> str:
    """Insert a comment line before a seeded top-level definition; returns the path."""
    path = rng.choice(files)
    text = (repo / path).read_text()
    tops = [
        min([node.lineno, *(d.lineno for d in node.decorator_list)])
        for node in ast.parse(text).body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    ]
    lines = text.split("\n")
    at = rng.choice(tops) - 1 if tops else 0
    lines.insert(at, f"# reviewed in pass {n}")
    (repo / path).write_text("\n".join(lines))
    return path


def mutate(repo: Path, mutation: dict[str, Any]) -> None:
    """Apply the case's one-line mutation where the original line is now (comments may have moved it)."""
    path = repo / mutation["path"]
    lines = path.read_text().split("\n")
    hits = [i for i, line in enumerate(lines) if line == mutation["original"]]
    index = min(hits, key=lambda i: abs(i + 1 - int(mutation["line"])))
    lines[index] = mutation["mutated"]
    path.write_text("\n".join(lines))


def build(case: dict[str, Any], dest: Path, rng: random.Random) -> tuple[Path, str, list[str], str]:
    """The history of one case: (repo, green sha, commits oldest first, culprit sha)."""
    source = {**case["source"], "mutation": None}
    repo = materialize(source, dest)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "release")
    green = git(repo, "rev-parse", "HEAD").strip()
    k = rng.randint(1, 8)
    at = rng.randrange(k)
    mutated_file = case["source"]["mutation"]["path"]
    files = sorted({mutated_file, *_targets(case)})
    shas: list[str] = []
    culprit = ""
    for i in range(k):
        author = rng.choice(AUTHORS)
        if i == at:
            mutate(repo, case["source"]["mutation"])
            title = f"{case['source']['mutation']['function']}: simplify"
        else:
            title = f"docs: review notes in {harmless(repo, files, rng, i)}"
        git(repo, "commit", "-q", "-am", title, author=author)
        shas.append(git(repo, "rev-parse", "HEAD").strip())
        if i == at:
            culprit = shas[-1]
    return repo, green, shas, culprit


def _targets(case: dict[str, Any]) -> list[str]:
    from bench.outside.corpus import BY_NAME

    return list(BY_NAME[case["source"]["package"]].targets)


def run_direct(command: str, repo: Path, home: Path) -> int:
    env = {**direct_env(home), **BASE_ENV}
    done = subprocess.run(
        command, shell=True, cwd=repo, env=env, capture_output=True, check=False, timeout=300
    )
    return done.returncode


def probe_for(repo: Path, scratch: Path, command: str, runner: Runner) -> Any:
    shutil.copytree(repo, scratch, symlinks=True)

    def probe(sha: str) -> Outcome:
        git(scratch, "checkout", "-q", "-f", sha)
        git(scratch, "clean", "-qfdx")
        ex = runner.run(scratch, command, timeout_s=120, env=BASE_ENV)
        return "pass" if ex.exit_code == 0 else "fail" if ex.exit_code == 1 else "skip"

    return probe


def repair(repo: Path, command: str, runner: Runner, proposer: Proposer, home: Path) -> dict[str, Any]:
    resolved = resolve_test_command(repo, explicit=command)
    start = time.monotonic()
    with SandboxWorkbench(repo, resolved, runner) as wb:
        loop = RepairLoop(None, proposer, wb, SystemClock(), config=LoopConfig(parallel=1))
        result = loop.run(RepairTask(kind="ci", test_command=command), BUDGET, "0")
        executions = wb.runs
    wall = time.monotonic() - start
    recheck = None
    if result.fixed:
        fresh = home / "recheck"
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.copytree(repo, fresh, symlinks=True)
        subprocess.run(["git", "apply", "-"], cwd=fresh, input=result.patch, text=True, check=True)
        recheck = run_direct(command, fresh, home)
    return {
        "fixed": result.fixed,
        "verdict": result.verdict,
        "explanation": result.explanation[:200],
        "revert": result.fixed and result.explanation.startswith(("Undo hunk", "Revert commit")),
        "executions": executions,
        "wall_s": round(wall, 2),
        "recheck_exit": recheck,
        "false_fixed": result.fixed and recheck != 0,
    }


def run_case(case: dict[str, Any], seed: int, runner: Runner, work: Path) -> dict[str, Any]:
    rng = random.Random(f"{seed}:{case['id']}")
    base = work / case["id"]
    repo, green, shas, culprit = build(case, base / "repo", rng)
    command = case["test_command"]
    changes: ChangeSet = read_changeset(repo, green)
    found = bisect(shas, probe_for(repo, base / "scratch", command, runner), budget=8)
    without = repair(repo, command, runner, TemplateProposer(), base)
    with_ = repair(
        repo, command, runner, ChangeAwareProposer(TemplateProposer(), check=command, changes=changes), base
    )
    culprit_commit = changes.commit(culprit)
    row = {
        "case": case["id"],
        "commits": len(shas),
        "culprit_index": shas.index(culprit),
        "culprit": culprit_commit.describe() if culprit_commit else culprit[:7],
        "bisect": {
            "status": found.status,
            "correct": found.culprit == culprit,
            "runs": found.runs,
            "named": changes.introduced_by(found.culprit[:7]) if found.culprit else "",
        },
        "without": without,
        "with": with_,
    }
    shutil.rmtree(base, ignore_errors=True)
    return row


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    multi = [r for r in rows if r["commits"] > 1]

    def part(key: str) -> dict[str, Any]:
        return {
            "fixed": sum(r[key]["fixed"] for r in rows),
            "fix_rate": round(sum(r[key]["fixed"] for r in rows) / n, 3) if n else 0.0,
            "false_fixed": sum(r[key]["false_fixed"] for r in rows),
            "by_revert": sum(r[key]["revert"] for r in rows),
            "median_executions": median(r[key]["executions"] for r in rows) if rows else 0,
            "median_wall_s": round(median(r[key]["wall_s"] for r in rows), 2) if rows else 0.0,
        }

    return {
        "cases": n,
        "median_commits": median(r["commits"] for r in rows) if rows else 0,
        "culprit_accuracy": round(sum(r["bisect"]["correct"] for r in rows) / n, 3) if n else 0.0,
        "culprit_correct": sum(r["bisect"]["correct"] for r in rows),
        "median_bisect_runs": median(r["bisect"]["runs"] for r in multi) if multi else 0,
        "max_bisect_runs": max((r["bisect"]["runs"] for r in rows), default=0),
        "without": part("without"),
        "with": part("with"),
    }


def spread_cases(limit: int) -> list[dict[str, Any]]:
    """At most ``limit`` outside cases (no hang case), spread over the packages."""
    cases = [json.loads(p.read_text()) for p in sorted(CASES.glob("*/case.json"))]
    cases = [c for c in cases if "hang" not in c.get("tags", ())]
    step = max(1, len(cases) // max(1, limit))
    return cases[::step][:limit]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--label", default="after")
    args = parser.parse_args(argv)
    runner = make_runner(toolchain_paths=[Path(sys.prefix)])
    cases = spread_cases(args.limit)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="arcs-bench-history-") as tmp:
        for case in cases:
            row = run_case(case, args.seed, runner, Path(tmp))
            rows.append(row)
            print(
                f"{case['id']}: {row['commits']} commits, bisect {row['bisect']['status']} "
                f"{'ok' if row['bisect']['correct'] else 'WRONG'} in {row['bisect']['runs']}; "
                f"without {row['without']['verdict']}, with {row['with']['verdict']}"
                f"{' (revert)' if row['with']['revert'] else ''}",
                file=sys.stderr,
                flush=True,
            )
    doc = {
        "label": args.label,
        "seed": args.seed,
        "budget": str(BUDGET),
        "summary": summarize(rows),
        "cases": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"history-{args.label}.json").write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc["summary"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
