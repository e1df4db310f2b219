"""Run the verdict bench (issue #23) with one ARCS tree and check every verdict outside the loop.

    .venv/bin/python -m bench.verdicts.run --label before --arcs /tmp/base-verdict
    .venv/bin/python -m bench.verdicts.run --label after  --arcs .

Each case of ``cases.jsonl`` is materialized as a git repository (:mod:`bench.verdicts.corpus`) and
repaired by ``python -m bot.cli fix REPO --tier 0 --test CMD --json`` run from the ``--arcs`` tree
(``PYTHONPATH`` set to it, a private ``ARCS_HOME``), with ``--since HEAD~1`` in the ``pre_since``
mode. Then, outside ARCS (directly, this venv's Python, a fresh copy):

* every ``fixed``: the patch is applied and the *exact* command run again; it must exit 0;
* every ``partial``: it is checked against the README's definition: a known-good baseline exists
  (only ``pre_since`` has one: commit 1), and the patched tree's failing tests (the command without
  its fail-fast flags) all fail on the known-good tree too — so every target passes and only
  failures proven there remain. A ``partial`` that does not hold is a disagreement (a bug);
* the returned or best candidate's changed functions are compared with the *original* package's
  (commit 1, without the bug) on the behaviour probe's inputs (:mod:`jobs.repair.behaviour`, this
  tree's), to measure what the probe's "unchecked changes" say about being right.

Results go to ``results/<label>.jsonl`` (one record per case); ``report.py`` summarizes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.repair.isolate import direct_env, run_command
from bench.verdicts.corpus import CASES, HERE, materialize_repo

RESULTS = HERE / "results"
FAIL_FAST = re.compile(r"(?<!\S)(-x|--exitfirst|--maxfail(?:=|\s+)\d+)(?!\S)")
FAILED_LINE = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


def _cases(only: list[str], path: Path = CASES) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if not only or r["id"] in only or r["mutant"] in only]


def _fix(case: dict[str, Any], repo: Path, arcs: Path, home: Path, cap_s: float) -> dict[str, Any]:
    trace = home / "trace.json"
    args = [sys.executable, "-m", "bot.cli", "fix", str(repo), "--tier", "0", "--test", case["test_command"]]
    args += ["--json", "--jobs", "2", "--trace-out", str(trace), "--no-index"]
    if case["mode"] == "pre_since":
        args += ["--since", "HEAD~1"]
    env = {
        **os.environ,
        "PYTHONPATH": str(arcs),
        "ARCS_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    env.pop("ANTHROPIC_API_KEY", None)
    start = time.perf_counter()
    try:
        done = subprocess.run(args, cwd=arcs, env=env, capture_output=True, text=True, timeout=cap_s)
    except subprocess.TimeoutExpired:
        return {"verdict": "bench_timeout", "exit": None, "wall_s": round(time.perf_counter() - start, 1)}
    wall = round(time.perf_counter() - start, 1)
    try:
        data = json.loads(done.stdout)
    except ValueError:
        return {
            "verdict": "bench_error",
            "exit": done.returncode,
            "wall_s": wall,
            "stderr": done.stderr[-800:],
        }
    rec: dict[str, Any] = {
        "verdict": data.get("verdict"),
        "exit": done.returncode,
        "reason": data.get("reason"),
        "wall_s": wall,
        "candidates": data.get("candidates"),
        "executions": data.get("executions"),
        "patch": data.get("patch") or "",
        "pre_existing": data.get("pre_existing_failures") or [],
        "best": data.get("best") or None,
    }
    if trace.is_file():
        t = json.loads(trace.read_text(encoding="utf-8"))
        rep = t.get("reproduction") or {}
        rec["targets"] = rep.get("targets") or []
        rec["known_good"] = rep.get("known_good")
        rec["behaviour"] = (t.get("outcome") or {}).get("behaviour") or None
        rec["baseline_s"] = ((rep.get("baseline") or {}).get("duration_s")) or None
        rec["known_good_s"] = (rep.get("timings") or {}).get("known_good_s")
    return rec


def _apply(repo: Path, patch: str) -> str:
    done = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "-"], cwd=repo, input=patch, text=True, capture_output=True
    )
    return "" if done.returncode == 0 else done.stderr.strip()[:300]


def _failing(command: str, repo: Path, tmp: Path) -> tuple[int | None, set[str]]:
    """Exit code and failing test ids of ``command`` without fail-fast flags, run directly."""
    plain = FAIL_FAST.sub("", command)
    code, _, out = run_command(f"{plain} -p no:cacheprovider -rfE", repo, direct_env(tmp), 300.0)
    return code, set(FAILED_LINE.findall(out))


def recheck(case: dict[str, Any], rec: dict[str, Any], tmp: Path) -> None:
    """Re-check a ``fixed`` or ``partial`` verdict outside the loop (see the module docstring)."""
    repo = materialize_repo(case, tmp / "recheck")
    if err := _apply(repo, rec["patch"]):
        rec["recheck"] = {"ok": False, "why": f"patch does not apply: {err}"}
        return
    if rec["verdict"] == "fixed":
        code, seconds, tail = run_command(case["test_command"], repo, direct_env(tmp), 300.0)
        rec["recheck"] = {
            "ok": code == 0,
            "exit": code,
            "s": round(seconds, 2),
            "tail": tail[-300:] if code else "",
        }
        return
    code, after = _failing(case["test_command"], repo, tmp)
    if case["mode"] != "pre_since":
        rec["recheck"] = {
            "ok": False,
            "why": "partial without a known-good baseline",
            "failing_after": sorted(after),
        }
        return
    good = materialize_repo(case, tmp / "good", buggy=False)
    _, at_good = _failing(case["test_command"], good, tmp)
    unproven = sorted(after - at_good)
    rec["recheck"] = {
        "ok": bool(after) and not unproven,
        "failing_after": sorted(after),
        "failing_at_known_good": sorted(at_good),
        "unproven": unproven,
    }


def truth(case: dict[str, Any], rec: dict[str, Any], tmp: Path) -> None:
    """Does the returned (or best) candidate behave like the original package on the probe's
    inputs? Runs the probe script directly on the original tree and on the patched one."""
    from jobs.repair.behaviour import OUTPUT, SCRIPT, parse_output, plan_probe, probe_script
    from jobs.repair.edits import AppliedEdits, FileChange
    from jobs.sandbox_workbench import DirectorySource

    patch = rec["patch"] or (rec.get("best") or {}).get("patch") or ""
    if not patch:
        return
    buggy = materialize_repo(case, tmp / "t-buggy")
    patched = materialize_repo(case, tmp / "t-patched")
    if _apply(patched, patch):
        return
    from jobs.repair.diffing import parse_patch

    paths = sorted(
        {f.path for f in parse_patch(patch) if (buggy / f.path).is_file() and (patched / f.path).is_file()}
    )
    applied = AppliedEdits(
        tuple(FileChange(p, (buggy / p).read_text("utf-8"), (patched / p).read_text("utf-8")) for p in paths)
    )
    plan = plan_probe(applied, DirectorySource.of(buggy))
    if not plan.targets:
        rec["truth"] = {"probed": False, "note": plan.note}
        return
    script = probe_script(plan)
    original = materialize_repo(case, tmp / "t-original", buggy=False)
    results = []
    for tree in (original, patched):
        (tree / SCRIPT).parent.mkdir(parents=True, exist_ok=True)
        (tree / SCRIPT).write_text(script, encoding="utf-8")
        run_command(f"python {shlex.quote(SCRIPT)}", tree, direct_env(tmp), 120.0)
        out = tree / OUTPUT
        results.append(parse_output(out.read_text("utf-8") if out.is_file() else "", plan))
    if results[0] is None or results[1] is None:
        rec["truth"] = {"probed": False, "note": "no probe output"}
        return
    differs = sum(
        a != b for t0, t1 in zip(results[0], results[1], strict=True) for a, b in zip(t0, t1, strict=False)
    )
    rec["truth"] = {
        "probed": True,
        "calls": sum(len(t.calls) for t in plan.targets),
        "differs_from_original": differs,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the cases and write ``results/<label>.jsonl``."""
    p = argparse.ArgumentParser(prog="python -m bench.verdicts.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--label", required=True)
    p.add_argument("--arcs", type=Path, required=True, help="the ARCS tree to run (PYTHONPATH)")
    p.add_argument("--cap", type=float, default=420.0, help="seconds one `arcs fix` may take")
    p.add_argument("--only", nargs="*", default=[], help="case or mutant ids")
    p.add_argument("--cases", type=Path, default=CASES, help="the case list (default: cases.jsonl)")
    args = p.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{args.label}.jsonl"
    done = {json.loads(line)["id"] for line in out.read_text().splitlines()} if out.is_file() else set()
    load = os.getloadavg()[0]
    for case in _cases(args.only, args.cases):
        if case["id"] in done:
            continue
        with tempfile.TemporaryDirectory(prefix="arcs-verdicts-") as tmp_s:
            tmp = Path(tmp_s)
            repo = materialize_repo(case, tmp / "repo")
            rec: dict[str, Any] = {"id": case["id"], "mode": case["mode"], "split": case["split"]}
            rec.update(_fix(case, repo, args.arcs.resolve(), tmp / "home", args.cap))
            if rec["verdict"] in ("fixed", "partial") and rec.get("patch"):
                recheck(case, rec, tmp)
            truth(case, rec, tmp)
            rec["load_1m"] = round(load, 2)
            load = os.getloadavg()[0]
        with out.open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")
        print(f"{case['id']}: {rec['verdict']} in {rec.get('wall_s')} s", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
