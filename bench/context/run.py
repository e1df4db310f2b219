"""Context bench: does the proposer's request show the lines the fix must change? (issue #15)

Per case (``bench.context.corpus.bench_cases``): the broken tree is repaired with the ``large``
tier through ``jobs.fix.fix`` — the path of ``arcs fix`` — against the oracle model
(:mod:`bench.context.oracle_server`) on the local Anthropic-compatible server, through the real
SDK, offline, with the ``hash`` embedder. The server records every request; per case:

* the *target lines* (``bench.context.visibility.target_lines``: what the known fix changes);
* per proposer request, which of them an evidence block showed; per round the union of its
  requests; **round 1**: did a request of round 1 show all of them, and what share; **by the last
  round**: did any request show all of them (the oracle then fixes the bug), and the best share;
* characters per proposer request (system + messages);
* standalone retrieval on the same failure: the repository index ``arcs search`` uses, queried with
  the reproduction's failure text (test ids, messages, frames; no hints), k=10, hybrid — the rank of
  the fix's file among the distinct files of the hits (top 5 counts).

    .venv/bin/python -m bench.context.run [--cases GLOB[,GLOB]] [--label before|after] [--cap S]

Each case runs in its own process, killed after ``--cap`` seconds (``no_verdict``). Results:
``bench/results/context.json`` (merged by label) and ``bench/results/context.md`` (the tables for
the ``## Context`` section of ``bench/RESULTS.md``).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, today
from bench.context.corpus import bench_cases, case_meta, materialize_case, project_of, split_of
from bench.context.explorer import ExplorerModel
from bench.context.oracle_server import OracleModel
from bench.context.visibility import TargetLine, rank_of_file, target_lines, visibility
from bench.repair.corpus import Case

RESULTS_JSON = RESULTS_DIR / "context.json"
RESULTS_MD = RESULTS_DIR / "context.md"
DISTANCES_JSON = Path(__file__).resolve().parent / "distances.json"
FAKE_API_KEY = "sk-ant-bench-oracle"
Record = dict[str, Any]


def failure_text(trace: Record, max_failures: int = 3) -> str:
    """The reproduction's failures as a person would paste them into ``arcs search``."""
    base = (trace.get("reproduction") or {}).get("baseline") or {}
    out: list[str] = []
    for f in (base.get("failures") or [])[:max_failures]:
        out.append(f"FAILED {f.get('test_id', '')} - {f.get('type', '')}: {f.get('message', '')}".strip())
        out.extend(f"  {p}:{n} in {fn}" for p, n, fn in f.get("frames", []))
        if f.get("path"):
            out.append(f"  at {f['path']}:{f['line']}")
    return "\n".join(out)


def _round_of(text: str, prompts: Sequence[str], fallback: int) -> int:
    """The trace round whose packed context the request carries (the last that matches)."""
    hits = [i for i, p in enumerate(prompts) if p and p in text]
    return hits[-1] if hits else fallback


def measure(targets: Sequence[TargetLine], oracle: OracleModel | ExplorerModel, trace: Record) -> Record:
    """Visibility per round and overall, and characters per request (see the module docstring)."""
    prompts = [str(r.get("prompt", "")) for r in trace.get("rounds", [])]
    per_round: dict[int, list[str]] = {}
    requests: list[Record] = []
    for i, req in enumerate(oracle.proposals):
        rnd = _round_of(req.text, prompts, fallback=i)
        per_round.setdefault(rnd, []).append(req.text)
        assert req.visibility is not None
        context = visibility(targets, [req.text], tools=False)  # the loop's evidence alone
        requests.append(
            {
                "round": rnd + 1,
                "chars": req.chars,
                "answer": req.answer,
                **req.visibility.to_json(),
                "context_all": context.all_shown,
                "context_share": round(context.share, 3),
            }
        )
    rounds = [
        {
            "round": r + 1,
            "requests": len(texts),
            **visibility(targets, texts).to_json(),
            "context_all": visibility(targets, texts, tools=False).all_shown,
        }
        for r, texts in sorted(per_round.items())
    ]
    first = rounds[0] if rounds else None
    every = [q.text for q in oracle.proposals]
    union = visibility(targets, every).to_json() if every else None
    best = max((q["share"] for q in requests), default=0.0)
    chars = [q["chars"] for q in requests]
    turns = [q.chars for q in oracle.log if q.tool in ("propose_patch", "explore")]
    calls = [c for r in trace.get("rounds", []) for c in r.get("tool_calls") or ()]
    return {
        "requests": requests,
        "rounds": rounds,
        "round1_all": bool(first and first["all"]),
        "round1_share": first["share"] if first else 0.0,
        "round1_file": bool(first and first["file_shown"]),
        "last_all": any(q["all"] for q in requests),
        "last_share": best,
        "union": union,
        "chars_median": statistics.median(chars) if chars else 0,
        "chars_max": max(chars) if chars else 0,
        "context_round1_all": bool(first and first["context_all"]),
        "context_last_all": any(q["context_all"] for q in requests),
        "turn_chars_median": statistics.median(turns) if turns else 0,
        "turn_chars_max": max(turns, default=0),
        "turns": len(turns),
        "tool_calls": len(calls),
        "tool_calls_by_name": {
            n: sum(1 for c in calls if c.get("name") == n)
            for n in sorted({str(c.get("name")) for c in calls})
        },
        "tokens": int((trace.get("spend") or {}).get("tokens") or 0),
        "first_blocks": _blocks_summary(oracle.proposals[0].text) if oracle.proposals else [],
    }


def _blocks_summary(text: str, limit: int = 12) -> list[str]:
    from bench.context.visibility import evidence_blocks

    return [f"{b.path}:{b.start}-{b.end}" for b in evidence_blocks(text)[:limit]]


def standalone_search(settings: Any, repo: Path, query_text: str, wanted: set[str]) -> Record:
    """Rank of the fix's file among the distinct files ``arcs search``'s retriever returns."""
    from indexing.index import RepoIndex
    from indexing.model import Query

    if not query_text.strip():
        return {"rank": None, "files": [], "error": "no failure text"}
    with RepoIndex.open(settings, repo) as index:
        index.refresh()
        hits = index.retriever().search(Query(text=query_text, k=10, mode="hybrid"))
    paths = [h.chunk.path for h in hits]
    distinct: list[str] = []
    for p in paths:
        if p not in distinct:
            distinct.append(p)
    return {"rank": rank_of_file(paths, wanted), "files": distinct[:5], "hits": hits}


def recheck(repo: Path, patch: str, command: str, scratch: Path) -> Record:
    """The brief's re-check of a ``fixed``: the loop's patch applied to a fresh copy of the broken
    tree and the exact test command run again directly, outside the loop and its sandbox (the
    bench venv's ``python`` first on PATH). ``false_fixed``: the loop said fixed, the command fails."""
    import shutil

    shutil.copytree(repo, scratch, symlinks=True)
    applied = subprocess.run(["git", "apply", "-"], cwd=scratch, input=patch, text=True, capture_output=True)
    if applied.returncode != 0:
        return {"recheck_exit": None, "false_fixed": True, "recheck_note": applied.stderr.strip()[:200]}
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    try:
        done = subprocess.run(command, shell=True, cwd=scratch, env=env, capture_output=True, timeout=600)
    except subprocess.TimeoutExpired:
        return {"recheck_exit": None, "false_fixed": True, "recheck_note": "timed out after 600 s"}
    return {"recheck_exit": done.returncode, "false_fixed": done.returncode != 0}


def run_case(case: Case, *, budget_wall_s: float = 900.0, stand_in: str = "oracle") -> Record:
    """Repair ``case`` with the large tier against the stand-in model (``oracle``: the passive
    oracle, ``explorer``: :mod:`bench.context.explorer`); measure what the model was shown."""
    from bot.errors import ArcsError
    from bot.settings import load_settings
    from jobs.fix import FixRequest, fix
    from jobs.repair.budget import Budget
    from jobs.wiring import llm_config
    from runners.toolchains import toolchain_paths
    from tests.fakes.anthropic_server import FakeAnthropicServer

    assert case.llm_fix is not None
    record: Record = _facts(case)
    with tempfile.TemporaryDirectory(prefix=f"arcs-ctx-{case.id}-") as tmp, FakeAnthropicServer() as server:
        base = Path(tmp)
        repo = materialize_case(case, base / "repo")
        files = {str(e["path"]): (repo / e["path"]).read_text(encoding="utf-8") for e in case.llm_fix.edits}
        targets = target_lines(files, case.llm_fix.edits)
        model = ExplorerModel if stand_in == "explorer" else OracleModel
        oracle = model(targets, case.llm_fix.edits)
        server.dynamic = oracle
        env = {
            "ARCS_HOME": str(base / "home"),
            "ARCS_EMBEDDER": "hash",
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "ANTHROPIC_BASE_URL": server.base_url,
        }
        settings = load_settings(env)
        request = FixRequest(
            repo=repo,
            test_command=case.test_command,
            tier="large",
            budget=Budget(wall_s=budget_wall_s),
            apply=False,
            trace_out=base / "trace.json",
            llm=llm_config(settings),
            toolchain_paths=tuple(toolchain_paths([])),
        )
        start = time.perf_counter()
        try:
            report = fix(settings, request)
            record["verdict"] = report.result.verdict
            if report.result.verdict == "fixed":
                record.update(recheck(repo, report.result.patch, case.test_command, base / "recheck"))
        except ArcsError as exc:
            record["verdict"] = "error"
            record["error"] = exc.message
        record["wall_s"] = round(time.perf_counter() - start, 2)
        trace: Record = {}
        if (base / "trace.json").is_file():
            trace = json.loads((base / "trace.json").read_text(encoding="utf-8"))
        record["targets"] = [t.to_json() for t in targets]
        record["stand_in"] = stand_in
        record.update(measure(targets, oracle, trace))
        record["answers"] = [q.answer for q in oracle.log]
        dump = os.environ.get("ARCS_CONTEXT_DUMP")
        if dump:  # the requests as sent, for reading a miss case by case
            folder = Path(dump) / case.id
            folder.mkdir(parents=True, exist_ok=True)
            for i, q in enumerate(oracle.log):
                (folder / f"{i:02d}-{q.tool}-{q.answer}.txt").write_text(q.text, encoding="utf-8")
        record["fixed"] = record.get("verdict") == "fixed"
        query = failure_text(trace)
        try:
            found = standalone_search(settings, repo, query, {t.path for t in targets})
            hits = found.pop("hits", [])
            found["line_in_top5"] = any(
                h.chunk.path == t.path and h.chunk.start_line <= t.line <= h.chunk.end_line
                for h in hits[:5]
                for t in targets
            )
        except Exception as exc:  # a search failure is a finding, not a crash
            found = {"rank": None, "files": [], "error": f"{type(exc).__name__}: {exc}"}
        record["search"] = found
    return record


def _facts(case: Case) -> Record:
    meta = case_meta(case.id)
    shape = meta.get("shape")
    if shape is None and DISTANCES_JSON.is_file():
        shape = json.loads(DISTANCES_JSON.read_text(encoding="utf-8")).get(case.id)
    return {
        "id": case.id,
        "split": split_of(case),
        "project": project_of(case),
        "language": case.language,
        "bug_class": case.bug_class,
        "shape": shape or {},
    }


# --------------------------------------------------------------------------- child processes


def run_isolated(case: Case, cap_s: float, stand_in: str = "oracle") -> Record:
    """``run_case`` in a child process killed (with its process group) after ``cap_s`` seconds."""
    with tempfile.TemporaryDirectory(prefix="arcs-ctx-one-") as tmp:
        out = Path(tmp) / "record.json"
        argv = [sys.executable, "-m", "bench.context.run", "--one", case.id, "--one-out", str(out)]
        argv += ["--stand-in", stand_in]
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        try:
            _, err = proc.communicate(timeout=cap_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return _facts(case) | {
                "verdict": "no_verdict",
                "error": f"killed after {cap_s:.0f} s",
                "wall_s": cap_s,
            }
        if out.is_file():
            record: Record = json.loads(out.read_text(encoding="utf-8"))
            return record
        return _facts(case) | {
            "verdict": "error",
            "error": (err or "")[-600:],
            "wall_s": round(time.perf_counter() - start, 2),
        }


def select(patterns: str | None) -> list[Case]:
    """The bench's cases whose id matches one of the comma-separated globs."""
    globs = [p.strip() for p in (patterns or "*").split(",") if p.strip()]
    return [c for c in bench_cases() if any(fnmatch.fnmatch(c.id, g) for g in globs)]


def code_info() -> Record:
    """Which copy of ``jobs`` this run imported."""
    import jobs

    where = Path(jobs.__file__).resolve().parent.parent
    head = subprocess.run(
        ["git", "-C", str(where), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(where), "status", "--short", "--", "jobs", "indexing"],
        capture_output=True,
        text=True,
    )
    return {"root": str(where), "head": head.stdout.strip(), "changed": len(dirty.stdout.splitlines())}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bench (or one case, for the child process)."""
    p = argparse.ArgumentParser(prog="python -m bench.context.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=None, help="comma-separated globs of case ids")
    p.add_argument("--label", default="", help="before|after: store the run under this label")
    p.add_argument("--cap", type=float, default=240.0, help="seconds per case (default 240)")
    p.add_argument("--jobs", type=int, default=2, help="cases run concurrently (default 2)")
    p.add_argument("--out", type=Path, default=RESULTS_JSON)
    p.add_argument(
        "--stand-in",
        choices=("oracle", "explorer"),
        default="oracle",
        help="the model: oracle (passive, default) or explorer (uses the tools; bench/context/explorer.py)",
    )
    p.add_argument("--one", default="", help=argparse.SUPPRESS)
    p.add_argument("--one-out", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        (case,) = [c for c in bench_cases() if c.id == args.one]
        record = run_case(case, budget_wall_s=args.cap, stand_in=args.stand_in)
        assert args.one_out is not None
        args.one_out.write_text(json.dumps(record), encoding="utf-8")
        return 0
    from concurrent.futures import ThreadPoolExecutor

    cases = select(args.cases)
    print(f"{len(cases)} cases, {args.jobs} at a time, cap {args.cap:.0f} s", file=sys.stderr)
    start = time.perf_counter()
    records: list[Record] = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for r in pool.map(lambda c: run_isolated(c, args.cap, args.stand_in), cases):
            records.append(r)
            print(
                f"  {r['id']:45} {r.get('verdict', '?'):12} r1 {r.get('round1_share', 0):.2f}"
                f" last {r.get('last_share', 0):.2f} search#{(r.get('search') or {}).get('rank')}"
                f" {r.get('wall_s', 0):.0f}s",
                file=sys.stderr,
            )
    if not args.label:
        print(json.dumps(records, indent=1))
        return 0
    from bench.context.report import merge_and_render

    merge_and_render(
        args.out,
        args.label,
        {
            "date": today(),
            "code": code_info(),
            "elapsed_s": round(time.perf_counter() - start, 1),
            "stand_in": args.stand_in,
            "records": records,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
