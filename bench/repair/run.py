"""Repair benchmark: repair every case of ``bench/repair/cases`` with ``jobs.fix.fix`` and measure.

Per case the repository (without its ``case.json``) is copied to a temporary folder, made a git
repository, and repaired through the same use case as ``arcs fix --apply`` (the real bubblewrap
sandbox, the virtual environment exposed as the Python toolchain exactly as ``bot/cli/fix_cmd.py``
does, ``ARCS_HOME`` in the temporary folder with the ``hash`` embedder).

* ``--tier 0`` (default): templates only. Tier 0 never opens the index (its retrieval budget k is
  0, so ``jobs.fix`` does not index); recorded per case: fixed, verdict, rounds, candidates,
  sandboxed executions, wall time, per-round overhead (round wall time minus test execution
  minus LLM wait, as the loop records it in the trace), and whether the applied patch contains
  ``expected_fix.contains`` ("matches expected"; a different patch that passes every gate still
  counts as fixed).
* ``--scripted-llm``: for the cases with an ``llm_wrong_fix`` (the "logic slip" cases), the large
  tier (B=5) against the in-repo Anthropic-compatible server (``tests/fakes/anthropic_server.py``)
  through the real SDK. The scripted model answers the plan call with a short plan and every
  ``propose_patch`` call with ``llm_wrong_fix`` until the request says earlier candidates were
  executed and failed (from round 2 on), then with ``llm_fix``. Checked: the loop converges in
  round 2; recorded: model calls, tokens and cost.
* ``--check``: validate the corpus without ARCS: the tests fail on the broken tree, pass after
  ``llm_fix``, still fail after ``llm_wrong_fix``, and ``expected_fix.contains`` appears only
  after the fix.

* Every ``fixed`` (and ``partial``) is re-checked outside the loop (``isolate.recheck``: the patch
  on a fresh copy, the exact command in a plain subprocess); ``false_fixed`` = fixed but the
  re-check failed. Each case runs in its own process with a cap (``--case-cap``), so a hang or a
  crash becomes a ``no_verdict``/``error`` record. ``--corpus outside`` adds the mutants of pinned
  PyPI packages (``bench/outside``); ``--label before|after`` stores a run as the before/after
  measurement of the verdict work (``verdicts.py``).

Results go to ``bench/results/repair.json`` and the generated block of ``## Repair`` in
``bench/RESULTS.md`` (a part that was not re-run is kept from the previous results).

    .venv/bin/python -m bench.repair.run [--tier 0|off] [--scripted-llm] [--cases GLOB] [--jobs N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.common import (
    RESULTS_DIR,
    machine_info,
    markdown_table,
    percentile,
    today,
    update_results_md,
)
from bench.repair.corpus import Case, apply_case_fix, copy_case, find_case, load_cases
from bench.repair.isolate import case_facts, direct_env, recheck, run_command, run_isolated
from bench.repair.verdicts import merge_records, render_verdicts, summarize_part

if TYPE_CHECKING:
    from bot.settings import Settings
    from jobs.fix import FixReport
    from jobs.repair.budget import Budget
    from jobs.repair.trace import Trace
    from tests.fakes.anthropic_server import ErrorReply, Reply

RESULTS_JSON = RESULTS_DIR / "repair.json"
OVERHEAD_TARGET_S = 1.0
FAKE_API_KEY = "sk-ant-bench-scripted"
TRIED_MARKER = "already executed and failed"
"""What the proposer's prompt says once earlier candidates failed (jobs/repair/prompts/propose.md)."""
BUG_CLASSES = (
    "renamed_symbol",
    "changed_signature",
    "off_by_one",
    "wrong_operator",
    "negated_condition",
    "missing_guard",
    "wrong_default",
    "swapped_arguments",
    "wrong_variable",
    "logic_slip",
)
LANGUAGES = ("python", "javascript")
RECHECKED_VERDICTS = ("fixed", "partial")
"""Verdicts whose patch the bench re-runs outside the loop (``fixed`` must pass it)."""
ENVIRONMENT_SIGNS = ("not found", "No module named", "Cannot find module")
"""What an environment case's output must show when run directly (``--check``)."""

Record = dict[str, Any]


# --------------------------------------------------------------------------- corpus


# --------------------------------------------------------------------------- corpus check


def _run_direct(command: str, repo: Path, home: Path, timeout_s: float = 120.0) -> tuple[int, float, str]:
    """Run ``command`` outside ARCS; a timeout counts as a failing run (exit -1)."""
    code, seconds, out = run_command(command, repo, direct_env(home), timeout_s)
    return (-1 if code is None else code), seconds, out


def check_case(case: Case) -> Record:
    """Validate one case without ARCS (see the module docstring)."""
    problems: list[str] = []
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix=f"arcs-check-{case.id}-") as tmp:
        base = Path(tmp)
        broken = copy_case(case, base / "broken", git=False)
        target = broken / case.expected_path
        if case.expect_verdict == "environment":
            pass  # nothing to fix in the code: the expected verdict is `environment`
        elif not target.is_file():
            problems.append(f"expected_fix.path {case.expected_path} does not exist")
        elif case.expected_contains in target.read_text(encoding="utf-8"):
            problems.append("expected_fix.contains is already in the broken file")
        timeout = 20.0 if "hang" in case.tags else 120.0
        rc, times["broken_s"], out = _run_direct(case.test_command, broken, base, timeout)
        if rc == 0:
            problems.append("the tests pass on the broken tree")
        if "hang" in case.tags and rc != -1:
            problems.append(f"a hang case must time out on the broken tree (exit {rc})")
        if case.expect_verdict == "environment":
            if not any(s in out for s in ENVIRONMENT_SIGNS):
                problems.append(f"no sign of a missing tool or module in the output:\n{out}")
            return {"id": case.id, "ok": not problems, "problems": problems, "times_s": times}
        for name, fix, want_pass in (("fixed", case.llm_fix, True), ("wrong", case.llm_wrong_fix, False)):
            if fix is None:
                if name == "fixed":
                    problems.append("no llm_fix to validate the case with")
                continue
            tree = copy_case(case, base / name, git=False)
            try:
                apply_case_fix(tree, fix)
            except ValueError as exc:
                problems.append(f"llm_{name} fix does not apply: {exc}")
                continue
            rc, times[f"{name}_s"], out = _run_direct(case.test_command, tree, base)
            if want_pass and rc != 0:
                problems.append(f"the tests fail after llm_fix:\n{out}")
            if not want_pass and rc == 0:
                problems.append("the tests pass after llm_wrong_fix (it should be wrong)")
            if want_pass and case.expected_contains not in (tree / case.expected_path).read_text(
                encoding="utf-8"
            ):
                problems.append("llm_fix does not produce expected_fix.contains")
    return {"id": case.id, "ok": not problems, "problems": problems, "times_s": times}


# --------------------------------------------------------------------------- running ARCS


def bench_settings(home: Path, *, api_key: str | None = None, base_url: str | None = None) -> Settings:
    """Isolated settings: ARCS_HOME under the case's temporary folder, the cheap ``hash`` embedder."""
    from bot.settings import load_settings

    env = {"ARCS_HOME": str(home), "ARCS_EMBEDDER": "hash"}
    if api_key:
        env["ANTHROPIC_API_KEY"] = api_key
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    return load_settings(env)


def _toolchains() -> tuple[Path, ...]:
    from runners.toolchains import toolchain_paths

    return tuple(toolchain_paths([]))


def _plus_lines(diff: str) -> str:
    return "\n".join(
        line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")
    )


def _is_known_fix(case: Case, diff: str) -> bool:
    """``diff`` is the case's known fix: it restores the mutated line (outside corpora) or adds the
    expected text (ours)."""
    mutation = (case.source or {}).get("mutation") or {}
    if mutation:
        minus = [ln[1:] for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
        plus = _plus_lines(diff).splitlines()
        return minus == [mutation["mutated"]] and plus == [mutation["original"]]
    return case.expected_contains in _plus_lines(diff)


def _baseline_facts(trace: Trace) -> Record:
    base = trace.reproduction.baseline
    if base is None:
        return {"summary": "not run", "failures": []}
    return {
        "summary": base.summary(),
        "failures": [
            {
                "test": f.test_id,
                "type": f.type,
                "at": f"{f.path}:{f.line}" if f.path else "",
                "frames": len(f.frames),
            }
            for f in base.failures[:6]
        ],
    }


def _rounds(trace: Trace) -> list[Record]:
    out: list[Record] = []
    for r in trace.rounds:
        t = r.timings
        llm_round = r.tier != "0"
        llm_wait = (t.get("propose_s", 0.0) if llm_round else 0.0) + (
            t.get("plan_s", 0.0) if llm_round and r.plan.get("source") == "llm" else 0.0
        )
        total = t.get("total_s", 0.0)
        execute = t.get("execute_s", 0.0)
        out.append(
            {
                "index": r.index + 1,
                "tier": r.tier,
                "candidates": len(r.candidates),
                "executed": sum(1 for c in r.candidates if c.run is not None and c.run.targets is not None),
                "total_s": round(total, 4),
                "execute_s": round(execute, 4),
                "llm_wait_s": round(llm_wait, 4),
                "overhead_s": round(max(0.0, total - execute - llm_wait), 4),
                "overhead_recorded_s": round(t.get("overhead_s", 0.0), 4),
                "propose_s": round(t.get("propose_s", 0.0), 4),
                "plan_s": round(t.get("plan_s", 0.0), 4),
                "retrieve_s": round(t.get("retrieve_s", 0.0), 4),
            }
        )
    return out


def _why_unfixed(case: Case, trace: Trace, expected_ids: list[str]) -> str:
    """One line: the verdict, the loop's reason, and what the trace shows about the cause."""
    out = trace.outcome
    if out.verdict in ("not_reproducible", "flaky", "environment"):
        return f"{out.verdict}: {out.reason}"
    base = trace.reproduction.baseline
    notes: list[str] = []
    if base is not None and base.failures and all(f.test_id == "<run>" for f in base.failures):
        notes.append(
            "the test output was not parsed (no parser in runners/results.py): one '<run>' failure, "
            "no test ids, frames or messages"
        )
    if not any(not c.duplicate_of for c in trace.candidates):
        notes.append("no template or mutation applies (0 candidates)")
    else:
        notes.append(out.reason)
    if expected_ids:
        tried = []
        for cid in expected_ids:
            cand = trace.find_candidate(cid)
            if cand is not None:
                tried.append(f"{cid}, rejected by {', '.join(cand.rejected_by) or 'nothing (not run)'}")
        notes.append("a candidate adding the expected text was tried (" + "; ".join(tried) + ")")
    return f"{out.verdict}: " + "; ".join(notes)


def summarize_run(case: Case, report: FixReport | None, wall_s: float, repo: Path, error: str = "") -> Record:
    """The per-case record of one ``fix`` call (``report`` None: it raised ``error``)."""
    record: Record = case_facts(case) | {"wall_s": round(wall_s, 3)}
    if report is None:
        record.update(
            fixed=False,
            verdict="error",
            reason=error,
            why=f"error: {error}",
            rounds=0,
            candidates=0,
            executions=0,
            llm_calls=0,
        )
        return record
    result = report.result
    trace = result.trace
    expected_ids = [
        c.id for c in trace.candidates if not c.duplicate_of and case.expected_contains in _plus_lines(c.diff)
    ]
    matches = False
    if report.applied:
        target = repo / case.expected_path
        matches = target.is_file() and case.expected_contains in target.read_text(encoding="utf-8")
    rounds = _rounds(trace)
    record.update(
        fixed=result.fixed,
        verdict=result.verdict,
        reason=result.reason,
        matches_expected=matches,
        expected_proposed=expected_ids,
        rounds=result.rounds,
        candidates=result.candidates,
        executions=result.spend.executions,
        loop_wall_s=round(result.spend.wall_s, 3),
        reproduce_s=round(trace.reproduction.timings.get("total_s", 0.0), 3),
        llm_calls=result.usage.calls,
        tokens=result.spend.tokens,
        usd=round(result.spend.usd, 6),
        usage={
            "input_tokens": result.usage.input_tokens,
            "output_tokens": result.usage.output_tokens,
            "cache_read_tokens": result.usage.cache_read_tokens,
            "cache_write_tokens": result.usage.cache_write_tokens,
            "calls": result.usage.calls,
        },
        budget_held=trace.bound_held,
        index_snapshot=trace.index_snapshot,
        baseline=_baseline_facts(trace),
        round_timings=rounds,
        final_candidate=trace.outcome.candidate,
        final_variant=next(
            (
                c.variant
                for c in trace.candidates
                if c.id == trace.outcome.candidate and trace.outcome.candidate
            ),
            "",
        ),
        patch=result.patch,
    )
    # Plausible is not right (#29): every candidate that passed every gate, and how many of them
    # are the known fix (the mutation's original line restored, else the expected text added).
    plausible = [c for c in trace.candidates if c.submittable and not c.duplicate_of]
    record["plausible"] = len(plausible)
    record["plausible_right"] = sum(1 for c in plausible if _is_known_fix(case, c.diff))
    record["returned_right"] = bool(result.fixed and _is_known_fix(case, result.patch))
    if not result.fixed:
        record["why"] = _why_unfixed(case, trace, expected_ids)
    if result.verdict in RECHECKED_VERDICTS:
        # The claim is checked outside the loop: the patch on a fresh copy, the exact command.
        record.update(recheck(case, result.patch))
        record["false_fixed"] = result.verdict == "fixed" and record["recheck_exit"] != 0
    return record


def run_tier0(case: Case, budget: Budget, parallel: int, keep: Path | None = None) -> Record:
    """Repair ``case`` with tier 0 (see the module docstring)."""
    from bot.errors import ArcsError
    from jobs.fix import FixRequest, fix
    from jobs.repair.loop import LoopConfig

    with tempfile.TemporaryDirectory(prefix=f"arcs-bench-{case.id}-") as tmp:
        base = Path(tmp)
        repo = copy_case(case, base / case.id)
        request = FixRequest(
            repo=repo,
            test_command=case.test_command,
            tier="0",
            budget=budget,
            apply=True,
            trace_out=base / "trace.json",
            config=LoopConfig(parallel=parallel),
            toolchain_paths=_toolchains(),
        )
        start = time.perf_counter()
        try:
            report = fix(bench_settings(base / "home"), request)
        except ArcsError as exc:
            return summarize_run(case, None, time.perf_counter() - start, repo, exc.message)
        wall = time.perf_counter() - start
        record = summarize_run(case, report, wall, repo)
        _keep_trace(keep, base / "trace.json", f"{case.id}.tier0.json")
        return record


def _keep_trace(keep: Path | None, trace: Path, name: str) -> None:
    if keep is not None and trace.is_file():
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(trace, keep / name)


# --------------------------------------------------------------------------- the scripted model


class ScriptedModel:
    """Dynamic replies of the fake Anthropic server for one case (see the module docstring)."""

    def __init__(self, case: Case) -> None:
        assert case.llm_fix is not None and case.llm_wrong_fix is not None
        self.case = case
        self.calls: list[str] = []
        """What each request got: ``plan``, ``wrong``, ``right`` or ``unexpected:<tool>``."""
        self._lock = threading.Lock()

    @staticmethod
    def _user_text(body: dict[str, Any]) -> str:
        parts: list[str] = []
        for message in body.get("messages", []):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(str(b.get("text", "")) for b in content if isinstance(b, dict))
        return "\n".join(parts)

    def __call__(self, body: dict[str, Any]) -> Reply | ErrorReply:
        from tests.fakes.anthropic_server import bad_request

        choice = body.get("tool_choice") or {}
        tool = str(choice.get("name", "")) if isinstance(choice, dict) else ""
        if tool == "submit_plan":
            plan = {
                "contract": f"The failing tests of {self.case.id} pass; the others keep passing.",
                "sketch": "Find the function the failing test calls and correct its logic.",
                "subgoals": [self.case.description[:150]],
            }
            return self._reply("plan", tool, plan)
        if tool == "propose_patch":
            right = TRIED_MARKER in self._user_text(body)
            fix = self.case.llm_fix if right else self.case.llm_wrong_fix
            assert fix is not None
            answer = {"explanation": fix.explanation, "edits": [dict(e) for e in fix.edits]}
            return self._reply("right" if right else "wrong", tool, answer)
        with self._lock:
            self.calls.append(f"unexpected:{tool or 'no tool'}")
        return bad_request(f"the scripted model has no answer for tool {tool!r}")

    def _reply(self, kind: str, tool: str, payload: dict[str, Any]) -> Reply:
        from tests.fakes.anthropic_server import Reply

        with self._lock:
            self.calls.append(kind)
        # Output tokens ~ the JSON of the tool input at 4 characters per token (input tokens are the
        # server's default: the request body's length / 4, all billed as uncached input).
        return Reply.tool(tool, payload, output_tokens=max(16, len(json.dumps(payload)) // 4))


def run_scripted(case: Case, budget: Budget, parallel: int, keep: Path | None = None) -> Record:
    """Repair ``case`` with the large tier against the scripted model (see the module docstring)."""
    from bot.errors import ArcsError
    from jobs.fix import FixRequest, fix
    from jobs.repair.loop import LoopConfig
    from jobs.wiring import llm_config
    from tests.fakes.anthropic_server import FakeAnthropicServer

    model = ScriptedModel(case)
    with (
        tempfile.TemporaryDirectory(prefix=f"arcs-bench-llm-{case.id}-") as tmp,
        FakeAnthropicServer() as server,
    ):
        server.dynamic = model
        base = Path(tmp)
        repo = copy_case(case, base / case.id)
        settings = bench_settings(base / "home", api_key=FAKE_API_KEY, base_url=server.base_url)
        request = FixRequest(
            repo=repo,
            test_command=case.test_command,
            tier="large",
            budget=budget,
            apply=True,
            trace_out=base / "trace.json",
            llm=llm_config(settings),
            config=LoopConfig(parallel=parallel),
            toolchain_paths=_toolchains(),
        )
        start = time.perf_counter()
        try:
            report = fix(settings, request)
        except ArcsError as exc:
            record = summarize_run(case, None, time.perf_counter() - start, repo, exc.message)
        else:
            record = summarize_run(case, report, time.perf_counter() - start, repo)
        _keep_trace(keep, base / "trace.json", f"{case.id}.large.json")
        final = str(record.get("final_candidate", ""))
        record.update(
            model=settings.model,
            answers=list(model.calls),
            server_errors=list(server.errors),
            converged_round_2=bool(record.get("fixed"))
            and record.get("rounds") == 2
            and final.startswith("r2"),
        )
        return record


# --------------------------------------------------------------------------- summaries


def _stats(values: Sequence[float], *pcts: float) -> dict[str, float | None]:
    out: dict[str, float | None] = {"median": round(statistics.median(values), 3) if values else None}
    for p in pcts:
        out[f"p{p:g}"] = round(percentile(values, p), 3) if values else None
    out["max"] = round(max(values), 3) if values else None
    return out


def summarize_tier0(records: Sequence[Record]) -> Record:
    """Fix rates overall/per class/per language, rounds and wall time per fix, overhead per round."""
    fixed = [r for r in records if r.get("fixed")]

    def rate(rs: Sequence[Record]) -> Record:
        n = len(rs)
        ok = sum(1 for r in rs if r.get("fixed"))
        return {
            "cases": n,
            "fixed": ok,
            "rate": round(ok / n, 3) if n else None,
            "matches_expected": sum(1 for r in rs if r.get("matches_expected")),
        }

    rounds = [rr for r in records for rr in r.get("round_timings", [])]
    overheads = [float(rr["overhead_s"]) for rr in rounds]
    return {
        "overall": rate(records),
        "by_language": {lang: rate([r for r in records if r["language"] == lang]) for lang in LANGUAGES},
        "by_class": {
            cls: rate([r for r in records if r["bug_class"] == cls])
            for cls in BUG_CLASSES
            if any(r["bug_class"] == cls for r in records)
        },
        "non_llm_classes": rate([r for r in records if r["bug_class"] != "logic_slip"]),
        "python_non_llm_classes": rate(
            [r for r in records if r["bug_class"] != "logic_slip" and r["language"] == "python"]
        ),
        "per_fix": {
            "rounds": _stats([float(r["rounds"]) for r in fixed], 90),
            "candidates": _stats([float(r["candidates"]) for r in fixed], 90),
            "executions": _stats([float(r["executions"]) for r in fixed], 90),
            "wall_s": _stats([float(r["wall_s"]) for r in fixed], 90),
            "loop_wall_s": _stats([float(r["loop_wall_s"]) for r in fixed], 90),
        },
        "per_round": {
            "rounds": len(rounds),
            "overhead_s": _stats(overheads, 95),
            "propose_s": _stats([float(rr["propose_s"]) for rr in rounds], 95),
            "execute_s": _stats([float(rr["execute_s"]) for rr in rounds], 95),
            "target_s": OVERHEAD_TARGET_S,
            "target_met": bool(overheads) and percentile(overheads, 95) <= OVERHEAD_TARGET_S,
        },
        "unfixed": [
            {"id": r["id"], "language": r["language"], "bug_class": r["bug_class"], "why": r.get("why", "")}
            for r in records
            if not r.get("fixed")
        ],
        "fixed_not_matching": [
            {"id": r["id"], "variant": r.get("final_variant", ""), "patch": r.get("patch", "")}
            for r in fixed
            if not r.get("matches_expected")
        ],
    }


def summarize_scripted(records: Sequence[Record]) -> Record:
    """Convergence count and token/cost accounting of the scripted-LLM run."""
    rounds = [rr for r in records for rr in r.get("round_timings", [])]
    return {
        "cases": len(records),
        "converged_round_2": sum(1 for r in records if r.get("converged_round_2")),
        "fixed": sum(1 for r in records if r.get("fixed")),
        "tokens": sum(int(r.get("tokens", 0)) for r in records),
        "usd": round(sum(float(r.get("usd", 0.0)) for r in records), 6),
        "calls": sum(int(r.get("usage", {}).get("calls", 0)) for r in records),
        "per_round_overhead_s": _stats([float(rr["overhead_s"]) for rr in rounds], 95),
        "not_converged": [
            {"id": r["id"], "verdict": r.get("verdict"), "why": r.get("why") or r.get("reason", "")}
            for r in records
            if not r.get("converged_round_2")
        ],
    }


# --------------------------------------------------------------------------- markdown


def _f(value: object, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _pct(part: Record) -> str:
    rate = part.get("rate")
    return "-" if rate is None else f"{100 * rate:.0f}%"


def render_markdown(results: Record) -> str:
    """The generated block of ``## Repair``."""
    lines: list[str] = []
    t0 = results.get("tier0")
    if t0:
        s = t0["summary"]
        o = t0["options"]
        lines.append(
            f"Tier 0, run {t0['date']}: `{o['command']}`; {len(t0['cases'])} cases, jobs {o['jobs']}, "
            f"candidates run {o['parallel']} at a time, budget {o['budget']}; {results['machine']['cpu']}, "
            f"{results['machine']['cpus_available']} CPUs, 1-min load average {t0['loadavg'][0]:.1f} -> "
            f"{t0['loadavg'][1]:.1f} (other jobs shared the machine); the whole pass took {t0['elapsed_s']:.0f} s"
            + (
                " (it also ran the verdict cases of the last section; these tables cover the `base` group)."
                if "code" in t0
                else "."
            )
        )
        lines.append("")
        rows: list[list[object]] = []
        for name, part in (
            ("all", s["overall"]),
            *((lang, s["by_language"][lang]) for lang in LANGUAGES if s["by_language"][lang]["cases"]),
            ("all but logic_slip", s["non_llm_classes"]),
            ("python, all but logic_slip", s.get("python_non_llm_classes")),
        ):
            if not part:
                continue
            rows.append(
                [
                    name,
                    part["cases"],
                    part["fixed"],
                    _pct(part),
                    f"{part['matches_expected']}/{part['fixed']}",
                ]
            )
        lines.append(markdown_table(["cases", "n", "fixed", "tier-0 fix rate", "matches expected"], rows))
        lines.append("")
        rows = [
            [cls, p["cases"], p["fixed"], _pct(p), f"{p['matches_expected']}/{p['fixed']}"]
            for cls, p in s["by_class"].items()
        ]
        lines.append(markdown_table(["bug class", "n", "fixed", "fix rate", "matches expected"], rows))
        lines.append("")
        pf = s["per_fix"]
        rows = [
            [
                name,
                _f(pf[key]["median"]),
                _f(pf[key]["p90"]),
                _f(pf[key]["max"]),
            ]
            for name, key in (
                ("rounds", "rounds"),
                ("candidates", "candidates"),
                ("sandboxed executions", "executions"),
                ("wall time s (fix call)", "wall_s"),
                ("wall time s (loop)", "loop_wall_s"),
            )
        ]
        lines.append(f"Per fix ({s['overall']['fixed']} fixed cases):")
        lines.append("")
        lines.append(markdown_table(["per fix", "median", "p90", "max"], rows))
        lines.append("")
        pr = s["per_round"]
        rows = [
            [
                name,
                _f(pr[key]["median"], 3),
                _f(pr[key]["p95"], 3),
                _f(pr[key]["max"], 3),
            ]
            for name, key in (
                ("overhead (round - tests - LLM wait)", "overhead_s"),
                ("of which template generation", "propose_s"),
                ("test execution", "execute_s"),
            )
        ]
        met = "met" if pr["target_met"] else "NOT met"
        lines.append(f"Per round ({pr['rounds']} tier-0 rounds, all cases):")
        lines.append("")
        lines.append(markdown_table(["per round, seconds", "median", "p95", "max"], rows))
        lines.append("")
        lines.append(
            f"Overhead per round outside test execution and LLM wait: median {_f(pr['overhead_s']['median'], 3)} s, "
            f"p95 {_f(pr['overhead_s']['p95'], 3)} s; target <= {OVERHEAD_TARGET_S:g} s: **{met}**."
        )
        lines.append("")
        if s["unfixed"]:
            lines.append(f"Cases tier 0 did not fix ({len(s['unfixed'])}), with the reason from the trace:")
            lines.append("")
            rows = [[u["id"], u["bug_class"], u["why"].replace("|", "/")] for u in s["unfixed"]]
            lines.append(markdown_table(["case", "class", "verdict: why"], rows))
            lines.append("")
        if s["fixed_not_matching"]:
            lines.append("Fixed, but not with the expected change (the patch passes every gate):")
            lines.append("")
            rows = [
                [
                    u["id"],
                    u["variant"],
                    " ".join(ln.strip() for ln in _plus_lines(u["patch"]).splitlines()[:2])[:90],
                ]
                for u in s["fixed_not_matching"]
            ]
            lines.append(markdown_table(["case", "template", "added line(s)"], rows))
            lines.append("")
    sl = results.get("scripted_llm")
    if sl:
        s = sl["summary"]
        o = sl["options"]
        lines.append(
            f"Scripted LLM, run {sl['date']}: `{o['command']}`; large tier (B=5, 2 candidates per round, "
            f"retrieval k=10 over a `hash`-embedder index), model id `{sl['model']}` priced from pricing.json, "
            f"budget {o['budget']}; 1-min load average {sl['loadavg'][0]:.1f} -> {sl['loadavg'][1]:.1f}. "
            f"The first answer (both round-1 candidates) is a plausible wrong patch, the answer after "
            f"execution feedback is `llm_fix`."
        )
        lines.append("")
        rows = []
        for r in sl["cases"]:
            u = r.get("usage", {})
            rows.append(
                [
                    r["id"],
                    "yes" if r.get("converged_round_2") else "NO",
                    r.get("verdict", ""),
                    r.get("rounds", 0),
                    " ".join(r.get("answers", [])),
                    u.get("input_tokens", 0),
                    u.get("output_tokens", 0),
                    f"{float(r.get('usd', 0.0)):.4f}",
                    _f(float(r.get("wall_s", 0.0)), 1),
                ]
            )
        lines.append(
            markdown_table(
                [
                    "case",
                    "converged in round 2",
                    "verdict",
                    "rounds",
                    "model answers",
                    "input tok",
                    "output tok",
                    "USD",
                    "wall s",
                ],
                rows,
            )
        )
        lines.append("")
        ov = s["per_round_overhead_s"]
        lines.append(
            f"Converged in round 2: **{s['converged_round_2']}/{s['cases']}**; {s['calls']} model calls, "
            f"{s['tokens']} tokens, ${s['usd']:.4f} in all (uncached input: the scripted server reports no "
            f"cache reads). Overhead per LLM round (round - tests - model wait; includes retrieval): median "
            f"{_f(ov['median'], 3)} s, p95 {_f(ov['p95'], 3)} s."
        )
        if s["not_converged"]:
            lines.append("")
            rows = [[n["id"], n["verdict"], str(n["why"]).replace("|", "/")] for n in s["not_converged"]]
            lines.append(markdown_table(["not converged", "verdict", "why"], rows))
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def _parallel_map(fn: Callable[[Case], Record], cases: Sequence[Case], jobs: int) -> Iterator[Record]:
    if jobs <= 1:
        for case in cases:
            yield fn(case)
        return
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(fn, cases)


def _loadavg() -> float:
    with contextlib.suppress(OSError):
        return os.getloadavg()[0]
    return float("nan")


def _run_part(
    name: str,
    fn: Callable[[Case], Record],
    cases: Sequence[Case],
    jobs: int,
    show: Callable[[Record], str],
) -> tuple[list[Record], list[float], float]:
    load_before = _loadavg()
    start = time.perf_counter()
    records: list[Record] = []
    for i, record in enumerate(_parallel_map(fn, cases, jobs), 1):
        records.append(record)
        print(f"[{name} {i}/{len(cases)}] {record['id']}: {show(record)}", file=sys.stderr, flush=True)
    return records, [round(load_before, 2), round(_loadavg(), 2)], round(time.perf_counter() - start, 1)


def _show_fix(r: Record) -> str:
    head = "FIXED" if r.get("fixed") else str(r.get("verdict", "")).upper()
    extra = " (matches expected)" if r.get("matches_expected") else ""
    return (
        f"{head}{extra} rounds={r.get('rounds')} cands={r.get('candidates')} "
        f"execs={r.get('executions')} wall={r.get('wall_s')}s"
        + ("" if r.get("fixed") else f" — {r.get('why', '')}")
    )


def _render_only() -> int:
    """Recompute the summaries from the stored per-case records and rewrite both outputs."""
    results: Record = json.loads(RESULTS_JSON.read_text(encoding="utf-8"))
    if "tier0" in results:
        results["tier0"]["summary"] = summarize_tier0(results["tier0"]["cases"])
    if "scripted_llm" in results:
        results["scripted_llm"]["summary"] = summarize_scripted(results["scripted_llm"]["cases"])
    for parts in results.get("verdicts", {}).values():
        for run in parts.values():
            run["summary"] = summarize_part(run["cases"])
    _write(results)
    return 0


def _write(results: Record) -> None:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    RESULTS_JSON.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    text = render_markdown(results)
    verdict_text = render_verdicts(results.get("verdicts", {}))
    if verdict_text:
        text = text + "\n\n" + verdict_text
    update_results_md("Repair", "repair", text)
    print(text)
    print(f"wrote {RESULTS_JSON} and the ## Repair block of bench/RESULTS.md", file=sys.stderr)


def code_info() -> Record:
    """Which copy of the ARCS code this process imports (``jobs``), its git HEAD and local changes."""
    import jobs

    root = Path(jobs.__file__).resolve().parent.parent

    def git_out(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
        return done.stdout.strip()

    status = git_out("status", "--short", "--untracked-files=no")
    return {
        "jobs_dir": str(root),
        "head": git_out("rev-parse", "HEAD"),
        "dirty_files": len(status.splitlines()) if status else 0,
    }


def _run_one(args: argparse.Namespace, budget: Budget) -> int:
    """Child mode (``--one ID``): repair one case, write its record to ``--one-out``."""
    import traceback

    case = find_case(args.one)
    start = time.perf_counter()
    try:
        if args.one_mode == "llm":
            record = run_scripted(case, budget, args.parallel, args.keep_traces)
        else:
            record = run_tier0(case, budget, args.parallel, args.keep_traces)
    except Exception as exc:  # a broken case must not end the whole bench: report it
        tail = traceback.format_exc().strip().splitlines()[-6:]
        record = case_facts(case) | {
            "fixed": False,
            "verdict": "error",
            "reason": f"{type(exc).__name__}: {exc}",
            "why": f"error: {type(exc).__name__}: {exc}",
            "traceback": tail,
            "wall_s": round(time.perf_counter() - start, 3),
            "rounds": 0,
            "candidates": 0,
            "executions": 0,
        }
    Path(args.one_out).write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
    return 0


def _child_args(args: argparse.Namespace) -> list[str]:
    out = ["--parallel", str(args.parallel), "--budget-wall", str(args.budget_wall)]
    if args.budget_iterations is not None:
        out += ["--budget-iterations", str(args.budget_iterations)]
    if args.budget_executions is not None:
        out += ["--budget-executions", str(args.budget_executions)]
    if args.keep_traces is not None:
        out += ["--keep-traces", str(args.keep_traces.resolve())]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    from jobs.repair.budget import Budget

    p = argparse.ArgumentParser(prog="python -m bench.repair.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--tier", choices=("0", "off"), default="0", help="tier-0 pass (default) or off")
    p.add_argument(
        "--scripted-llm", action="store_true", help="also run the large tier against the scripted model"
    )
    p.add_argument("--cases", metavar="GLOB", help="case ids to run (comma-separated globs; default all)")
    p.add_argument(
        "--corpus",
        default="ours",
        metavar="NAMES",
        help="comma-separated corpora: ours (bench/repair/cases), outside (bench/outside/cases); default ours",
    )
    p.add_argument(
        "--label",
        choices=("before", "after"),
        help="store the run as the before/after measurement of the verdict work (merged by case id)",
    )
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="cases repaired concurrently (default 1)")
    p.add_argument(
        "--parallel",
        type=int,
        default=1,
        metavar="N",
        help="candidates tested concurrently per repair (default 1)",
    )
    p.add_argument("--budget-iterations", type=int, metavar="N", help="rounds at most (default 5)")
    p.add_argument("--budget-executions", type=int, metavar="N", help="sandboxed runs at most (default 60)")
    p.add_argument(
        "--budget-wall", type=float, default=600.0, metavar="S", help="seconds per case (default 600)"
    )
    p.add_argument(
        "--case-cap",
        type=float,
        default=300.0,
        metavar="S",
        help="kill a case's process after S seconds and record `no_verdict` (default 300)",
    )
    p.add_argument(
        "--in-process", action="store_true", help="run cases in this process (no cap, no isolation)"
    )
    p.add_argument("--check", action="store_true", help="only validate the corpus (no ARCS)")
    p.add_argument("--keep-traces", type=Path, metavar="DIR", help="copy every trace into DIR")
    p.add_argument("--no-write", action="store_true", help="do not write bench/results or RESULTS.md")
    p.add_argument(
        "--render",
        action="store_true",
        help="only recompute the summaries of bench/results/repair.json and rewrite the RESULTS.md block",
    )
    p.add_argument("--one", metavar="ID", help=argparse.SUPPRESS)
    p.add_argument("--one-mode", choices=("tier0", "llm"), default="tier0", help=argparse.SUPPRESS)
    p.add_argument("--one-out", metavar="FILE", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.jobs < 1 or args.parallel < 1:
        p.error("--jobs and --parallel must be at least 1")
    if args.render:
        return _render_only()

    changes: dict[str, float] = {"wall_s": args.budget_wall}
    if args.budget_iterations is not None:
        changes["iterations"] = args.budget_iterations
    if args.budget_executions is not None:
        changes["executions"] = args.budget_executions
    budget = Budget().with_(**changes)
    if args.one:
        return _run_one(args, budget)

    corpora = tuple(c.strip() for c in args.corpus.split(",") if c.strip())
    unknown = [c for c in corpora if c not in ("ours", "outside", "injected")]
    if unknown or not corpora:
        p.error(f"unknown corpus {', '.join(unknown) or '(none)'}: use ours, outside, injected")
    cases = load_cases(args.cases, corpora)

    if args.check:
        bad = 0
        for rec in _parallel_map(check_case, cases, args.jobs):
            times = " ".join(f"{k}={v:.2f}" for k, v in rec["times_s"].items())
            print(f"{'ok  ' if rec['ok'] else 'FAIL'} {rec['id']}  {times}")
            for problem in rec["problems"]:
                print(f"     - {problem}")
            bad += not rec["ok"]
        print(f"{len(cases) - bad}/{len(cases)} cases valid")
        return 1 if bad else 0

    budget_text = (
        f"{budget.iterations} rounds / {budget.executions} executions / {budget.wall_s:g} s wall per case"
    )
    command = "python -m bench.repair.run " + " ".join(argv if argv is not None else sys.argv[1:])
    code = code_info()
    print(
        f"ARCS code imported from {code['jobs_dir']} (HEAD {code['head'][:9]}, "
        f"{code['dirty_files']} files changed)",
        file=sys.stderr,
    )
    options = {
        "command": command.strip(),
        "jobs": args.jobs,
        "parallel": args.parallel,
        "budget": budget_text,
        "cases": args.cases or "*",
        "corpus": ",".join(corpora),
        "case_cap_s": None if args.in_process else args.case_cap,
    }
    results: Record = {}
    if RESULTS_JSON.is_file():
        with contextlib.suppress(ValueError):
            results = json.loads(RESULTS_JSON.read_text(encoding="utf-8"))
    results["machine"] = machine_info()
    child = _child_args(args)

    def tier0(c: Case) -> Record:
        if args.in_process:
            return run_tier0(c, budget, args.parallel, args.keep_traces)
        return run_isolated(c, "tier0", child, args.case_cap)

    def scripted(c: Case) -> Record:
        if args.in_process:
            return run_scripted(c, budget, args.parallel, args.keep_traces)
        return run_isolated(c, "llm", child, args.case_cap)

    def store(part: str, records: list[Record], load: list[float], elapsed: float) -> None:
        if not args.label:
            return
        slot = results.setdefault("verdicts", {}).setdefault(args.label, {})
        old = slot.get(part, {}).get("cases", [])
        merged = merge_records(old, records)
        run = {"date": today(), "command": options["command"], "code": code, "loadavg": load}
        # Every run that contributed records (a filtered run replaces only its own cases).
        runs = [*slot.get(part, {}).get("runs", []), {**run, "elapsed_s": elapsed, "cases": len(records)}]
        slot[part] = {
            "runs": runs,
            "date": today(),
            "options": options,
            "code": code,
            "loadavg": load,
            "elapsed_s": elapsed,
            "summary": summarize_part(merged),
            "cases": merged,
        }

    full_ours = "ours" in corpora and not args.cases
    if args.tier == "0":
        records, load, elapsed = _run_part("tier0", tier0, cases, args.jobs, _show_fix)
        for part in corpora:
            store(part, [r for r in records if r.get("corpus", "ours") == part], load, elapsed)
        if full_ours:
            base = [
                r for r in records if r.get("corpus", "ours") == "ours" and r.get("group", "base") == "base"
            ]
            results["tier0"] = {
                "date": today(),
                "options": options,
                "code": code,
                "loadavg": load,
                "elapsed_s": elapsed,
                "summary": summarize_tier0(base),
                "cases": base,
            }
    if args.scripted_llm:
        llm_cases = [c for c in cases if c.is_llm_case]
        if not llm_cases:
            print(
                "no selected case has llm_fix and llm_wrong_fix: skipping the scripted run", file=sys.stderr
            )
        else:
            records, load, elapsed = _run_part(
                "llm",
                scripted,
                llm_cases,
                args.jobs,
                lambda r: (
                    ("CONVERGED r2 " if r.get("converged_round_2") else "NOT CONVERGED ")
                    + _show_fix(r)
                    + f" answers={' '.join(r.get('answers', []))} usd={r.get('usd')}"
                ),
            )
            store("scripted", records, load, elapsed)
            from jobs.fix import DEFAULT_MODEL

            slips = [r for r in records if r.get("expect_verdict") != "environment"]
            if slips and not args.cases:
                results["scripted_llm"] = {
                    "date": today(),
                    "options": options,
                    "loadavg": load,
                    "elapsed_s": elapsed,
                    "model": DEFAULT_MODEL,
                    "summary": summarize_scripted(slips),
                    "cases": slips,
                }

    if args.no_write or (args.cases and not args.label):
        print(render_markdown(results))
        if args.cases and not args.no_write:
            print("(--cases given without --label: results not written)", file=sys.stderr)
        return 0
    _write(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
