"""RepairReport: built from the loop's result, its JSON round trip, the v1 summary stored before it
(a fixture recorded from the old code), and the RepairSummary the publisher renders of an attempt."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.store.models import Attempt
from jobs.repair.budget import Budget, Spend
from jobs.repair.loop import RepairResult
from jobs.repair.proposers.replay import RecordingLLM
from jobs.repair.report import MAX_FAILURE_LOG_CHARS, REPORT_VERSION, RepairReport
from jobs.repair.trace import render_markdown
from jobs.repair.trace_read import TestTally, Verification
from jobs.report_summary import attempt_summary, stored_report
from jobs.summary import RepairSummary
from jobs.summary import TestTally as TestTally_
from tests.jobs.repair.test_trace import SCRIPT, T, retriever, run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report"
TARGET = "tests/test_rules.py::test_eighteen_is_adult"


def recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (FIXTURES / f"attempt_trace_v1_{name}.json").read_text(encoding="utf-8")
    )
    return data


def attempt_of(outcome: Mapping[str, Any], trace: Mapping[str, Any] | None, **columns: Any) -> Attempt:
    """An attempt row as the pipeline's _record_outcome leaves it."""
    values: dict[str, Any] = {
        "id": 7,
        "idempotency_key": "k",
        "repo": "octo/ages",
        "owner": "octo",
        "trigger": "ci",
        "head_sha": "a" * 40,
        "head_branch": "main",
        "failure_class": "test",
        "status": "fixed" if outcome["fixed"] else "no_fix",
        "verdict": outcome["verdict"],
        "reason": outcome["reason"],
        "tier": outcome["tier"] or None,
        "rounds": outcome["rounds"],
        "tokens": outcome["tokens"],
        "cost_usd": outcome["cost_usd"],
        "patch": outcome["patch"] or None,
        "explanation": outcome["explanation"] or None,
        "trace": dict(trace) if trace else None,
    }
    values.update(columns)
    return Attempt(**values)


@pytest.fixture(scope="module")
def result() -> RepairResult:
    from jobs.repair.fakes import ScriptedLLM

    return run(RecordingLLM(ScriptedLLM(SCRIPT)), retriever())


# --- the v1 shape (jobs.repair_service.outcome_from_report) --------------------------------------


def test_the_v1_summary_reads_as_a_report() -> None:
    data = recorded("fixed")["trace"]
    report = RepairReport.from_json(data)
    assert report.v == 1 and report.verdict == "" and report.trace_id == data["trace_id"]
    assert report.tests_before == TestTally(2, 1, 0, (TARGET,))
    assert report.tests_after == TestTally(3, 0, 0, ())
    assert report.target_tests == (TARGET,) and report.failure_class == "test"
    assert [g.gate for g in report.gates][-1] == "verification" and all(g.passed for g in report.gates)
    assert report.verification is not None and report.verification.command == "pytest -q"
    assert report.verification_line == "`pytest -q` exit 0 in 0.0s (3 passed, 0 failed)"
    assert report.spend == Spend(wall_s=data["duration_s"], executions=5)
    assert (report.candidates, report.tiers, report.tier) == (1, ("0",), "0")
    assert report.trace_markdown == data["markdown"] and report.failure_log == data["failure_log"]
    assert report.commands is not None and report.commands.toolchain.startswith("fake: python")
    assert report.interrupt is None and report.budget is None and report.files == {}


def _v1_tally(data: Any) -> TestTally_ | None:
    if not isinstance(data, Mapping):
        return None
    return TestTally_(
        passed=int(data.get("passed") or 0),
        failed=int(data.get("failed") or 0),
        errors=int(data.get("errors") or 0),
        failing=tuple(str(t) for t in data.get("failing") or ()),
    )


def _v1_verification_line(v: Any) -> str:
    if not isinstance(v, Mapping) or not v.get("command"):
        return ""
    counts = f"{v.get('passed', 0)} passed, {v.get('failed', 0)} failed"
    if v.get("errors"):
        counts += f", {v.get('errors')} errors"
    if v.get("timed_out"):
        counts += ", timed out"
    return (
        f"`{v.get('command', '')}` exit {v.get('exit_code', '?')} in {float(v.get('duration_s', 0.0)):.1f}s "
        f"({counts})"
    )


def v1_repair_summary(
    attempt: Attempt, *, fixed: bool | None = None, reason: str | None = None
) -> RepairSummary:
    """jobs.pipeline.repair_summary as of cd533c4 (with _tally and _verification_line), the reference."""
    trace: Mapping[str, Any] = attempt.trace or {}
    issue = attempt.trigger == "issue" or (attempt.trigger == "comment" and attempt.head_branch is None)
    gates = tuple(
        (str(g.get("gate") or "?"), bool(g.get("passed")), str(g.get("detail") or ""))
        for g in trace.get("gates") or ()
        if isinstance(g, Mapping)
    )
    failure = ""
    if not issue:
        where = attempt.head_branch or attempt.base_branch or (attempt.head_sha or "")[:12]
        failure = f"CI failed on `{where}`" + (
            f" ({attempt.failure_class} failure)." if attempt.failure_class else "."
        )
    return RepairSummary(
        verdict=attempt.verdict or "",
        fixed=attempt.status == "fixed" if fixed is None else fixed,
        reason=reason if reason is not None else (attempt.reason or ""),
        kind="issue" if issue else "ci",
        failure_summary=failure,
        root_cause=attempt.explanation or "",
        diff=attempt.patch or "",
        target_tests=tuple(str(t) for t in trace.get("target_tests") or ()),
        tests_before=_v1_tally(trace.get("tests_before")),
        tests_after=_v1_tally(trace.get("tests_after")),
        pre_existing=tuple(str(t) for t in trace.get("pre_existing") or ()),
        verification=_v1_verification_line(trace.get("verification")),
        gates=gates,
        tokens=attempt.tokens or 0,
        cost_usd=attempt.cost_usd or 0.0,
        rounds=attempt.rounds or 0,
        duration_s=float(trace.get("duration_s") or 0.0),
        tier=attempt.tier or "",
        trace_markdown=str(trace.get("markdown") or ""),
        issue_number=attempt.issue_number if issue else None,
        head_sha=attempt.head_sha or "",
        attempt_id=str(attempt.id),
    )


PARTIAL_V1 = {  # the v1 shape tests/jobs/test_pipeline.py gave a partial outcome
    "pre_existing": ["tests/test_b.py::test_service"],
    "verification": {"command": "pytest -x", "exit_code": 1, "duration_s": 1.5, "passed": 3, "failed": 1},
}


@pytest.mark.parametrize("name", ["fixed", "not_reproducible", "partial"])
@pytest.mark.parametrize(
    "columns",
    [
        {},
        {"trigger": "issue", "issue_number": 12, "head_branch": None},
        {"trigger": "comment", "issue_number": 3, "head_branch": None, "base_branch": "dev"},
        {"head_branch": None, "base_branch": "dev", "failure_class": None},
    ],
)
@pytest.mark.parametrize("override", [{}, {"fixed": False, "reason": "a refusal"}])
def test_attempt_summary_equals_the_old_repair_summary(
    name: str, columns: dict[str, Any], override: dict[str, Any]
) -> None:
    if name == "partial":
        fixture = {"outcome": {**recorded("fixed")["outcome"], "verdict": "partial", "fixed": False}}
        fixture["trace"] = PARTIAL_V1
    else:
        fixture = recorded(name)
    attempt = attempt_of(fixture["outcome"], fixture["trace"], **columns)
    summary = attempt_summary(attempt, **override)
    assert summary == v1_repair_summary(attempt, **override)
    live = getattr(pytest.importorskip("jobs.summary"), "repair_summary", None)
    if live is not None:  # the function D2 keeps until it calls attempt_summary
        assert summary == live(attempt, **override)


def test_attempt_summary_of_the_recorded_fix() -> None:
    fixture = recorded("fixed")
    summary = attempt_summary(attempt_of(fixture["outcome"], fixture["trace"]))
    assert summary.fixed and summary.verdict == "fixed" and summary.kind == "ci"
    assert summary.failure_summary == "CI failed on `main` (test failure)."
    assert summary.target_tests == (TARGET,) and summary.tests_before is not None
    assert summary.tests_before.failing == (TARGET,) and summary.diff == fixture["outcome"]["patch"]
    assert summary.verification == "`pytest -q` exit 0 in 0.0s (3 passed, 0 failed)"
    assert summary.duration_s == fixture["trace"]["duration_s"] and summary.attempt_id == "7"
    assert summary.trace_markdown.startswith("## ARCS: FIXED")


def test_an_attempt_without_a_readable_report_still_summarizes() -> None:
    outcome = recorded("fixed")["outcome"]
    for trace in (None, {}, {"v": REPORT_VERSION + 1, "verdict": "fixed"}):
        attempt = attempt_of(outcome, trace)
        assert stored_report(attempt).verdict == ""
        summary = attempt_summary(attempt)
        assert summary.tests_before is None and summary.gates == () and summary.fixed


# --- built from the loop's result ------------------------------------------------------------------


def test_from_result(result: RepairResult) -> None:
    report = RepairReport.from_result(
        result,
        trace_path="/traces/t.json",
        trace_markdown="md",
        files={"calc/core.py": "x", "gone.py": None},
        target_tests=("ignored, the trace has targets",),
        failure_class="test",
        failure_log="L" * (MAX_FAILURE_LOG_CHARS + 10),
        usd_capped=True,
    )
    assert report.fixed and report.verdict == "fixed" and report.patch == result.patch
    assert report.tier == result.tiers[-1] and report.tiers == tuple(result.tiers)
    assert report.spend == result.spend and report.budget == result.budget
    assert report.tests_before is not None and report.tests_before.failing == (T,)
    assert report.tests_before.command == result.tests_before.command  # type: ignore[union-attr]
    assert report.target_tests == tuple(result.trace.reproduction.targets)
    assert [g.gate for g in report.gates] == [g.gate for g in result.gates]
    assert report.trace_id == result.trace.id and report.trace_path == "/traces/t.json"
    assert len(report.failure_log) == MAX_FAILURE_LOG_CHARS and report.usd_capped
    assert report.files == {"calc/core.py": "x", "gone.py": None}


def test_no_patch_without_a_fix_or_a_partial(result: RepairResult) -> None:
    failed = replace(result, verdict="reverted", fixed=False)
    assert RepairReport.from_result(failed, trace_path="", trace_markdown="").patch == ""
    partial = replace(result, verdict="partial", fixed=False)
    assert RepairReport.from_result(partial, trace_path="", trace_markdown="").patch == result.patch


def test_json_round_trip(result: RepairResult) -> None:
    report = RepairReport.from_result(
        result,
        trace_path="t.json",
        trace_markdown=render_markdown(result.trace),
        files={"calc/core.py": "y" * 100_000, "old.py": None},
        failure_class="test",
        failure_log="log",
    )
    report = replace(
        report,
        verification=Verification("pytest -x", 1, 1.5, 3, 1, pre_existing=("a",)),
        stopped_by="usd",
    )
    data = json.loads(json.dumps(report.to_json()))
    assert data["v"] == REPORT_VERSION
    assert RepairReport.from_json(data) == report  # files and patch are read whole
    without = RepairReport.from_json(report.to_json(with_files=False))
    assert without.files == {} and without.patch == report.patch


# --- reading is tolerant, versions are checked -------------------------------------------------------


def test_from_json_refuses_newer_versions_and_non_objects() -> None:
    with pytest.raises(ValueError, match="unsupported repair report version 3"):
        RepairReport.from_json({"v": REPORT_VERSION + 1})
    with pytest.raises(ValueError, match="JSON object"):
        RepairReport.from_json(["v", 2])
    with pytest.raises(ValueError, match="unsupported"):
        RepairReport.from_json({"v": "2"})


@pytest.mark.parametrize(
    "data",
    [
        {"v": 2, "spend": "lots", "budget": {"usd": -1, "tokens": "x"}, "gates": [None, {"gate": 1}]},
        {"v": 2, "tests_before": {"passed": "many", "failed": [1, 2]}, "files": {"a": 3}, "rounds": 2.5},
        {"tests_after": [], "verification": {"exit_code": 0}, "interrupt": "yes", "tiers": "large"},
    ],
)
def test_garbage_reads_as_defaults(data: dict[str, Any]) -> None:
    report = RepairReport.from_json(data)
    assert report.verification is None and report.interrupt is None
    if report.budget is not None:
        assert report.budget == Budget(usd=Budget().usd, tokens=Budget().tokens)
    assert all(isinstance(g.gate, str) for g in report.gates) and report.files in ({}, {"a": None})


def test_from_trace_agrees_with_from_result(result: RepairResult) -> None:
    from jobs.repair.trace import dump_trace
    from jobs.repair.trace_read import TraceDoc

    doc = TraceDoc.read(json.loads(dump_trace(result.trace)))
    built = RepairReport.from_result(result, trace_path="t.json", trace_markdown="md")
    read = RepairReport.from_trace(doc, trace_path="t.json", trace_markdown="md")
    # A trace records no budget (a run with over 50 failing tests would also list up to 200), and
    # its reader keeps no per-test outcomes of the re-runs: the test history is fed from the report.
    assert read == replace(built, budget=None, test_runs=())


def test_the_failing_tests_runs_are_kept_for_the_test_history(result: RepairResult) -> None:
    built = RepairReport.from_result(result, trace_path="t.json", trace_markdown="md")
    rep = result.trace.reproduction
    assert rep.baseline is not None and rep.reruns
    first = [o for o in built.test_runs if o.source == "reproduction" and o.run == 0]
    assert [o.test_id for o in first] == [*rep.baseline.failed, *rep.baseline.errors]
    assert {o.run for o in built.test_runs if o.source == "reproduction"} == set(range(len(rep.reruns) + 1))
    assert RepairReport.from_json(json.loads(json.dumps(built.to_json()))).test_runs == built.test_runs
