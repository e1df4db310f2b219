"""TraceDoc: one tolerant, version-aware reader of trace JSON (the dashboard's), under load_trace's
strict check."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobs.repair import trace as trace_module
from jobs.repair.fakes import ScriptedLLM
from jobs.repair.loop import RepairResult
from jobs.repair.proposers.replay import RecordingLLM
from jobs.repair.trace import dump_trace, load_trace
from jobs.repair.trace_read import (
    MAX_TEXT,
    TRACE_VERSION,
    TraceDoc,
    Verification,
    check_header,
    verification_line,
)
from tests.bot.dashboard.conftest import NOW
from tests.bot.dashboard.seed import make_trace
from tests.jobs.repair.test_trace import SCRIPT, T, retriever, run


@pytest.fixture(scope="module")
def result() -> RepairResult:
    return run(RecordingLLM(ScriptedLLM(SCRIPT)), retriever())


def test_a_trace_of_this_version(result: RepairResult) -> None:
    trace = result.trace
    doc = TraceDoc.read(json.loads(dump_trace(trace)))
    assert doc.supported and doc.version == TRACE_VERSION and doc.id == trace.id
    assert doc.outcome.verdict == "fixed" and doc.outcome.fixed and doc.outcome.patch == result.patch
    assert doc.reproduction.baseline is not None and doc.reproduction.baseline.failing == (T,)
    assert doc.reproduction.targets == tuple(trace.reproduction.targets)
    assert [r.number for r in doc.rounds] == [1]
    assert [c.id for c in doc.rounds[0].candidates] == [c.id for c in trace.candidates]
    assert doc.rounds[0].candidates[-1].status == "submittable"
    assert [g.gate for g in doc.outcome.gates] == [g.gate for g in trace.outcome.gates]
    assert doc.spend.executions == trace.spend.executions and doc.spend.tokens == trace.spend.tokens
    assert {b.name for b in doc.bound} == set(trace.bound()) and doc.interrupt is None


def test_the_dashboards_seed_trace() -> None:
    doc = TraceDoc.read(make_trace(NOW))
    assert doc.supported and doc.id == "seed-trace-0001" and doc.outcome.candidate
    assert [c.status for c in doc.rounds[0].candidates] == ["rejected by targets", "rejected by regressions"]
    before = doc.reproduction.baseline
    assert before is not None and (before.passed, before.failed, before.exit_code) == (2, 1, 1)
    assert before.text == "2 passed, 1 failed" and before.failing


def test_a_newer_version_is_read_but_not_supported(result: RepairResult) -> None:
    data: dict[str, Any] = {**json.loads(dump_trace(result.trace)), "version": TRACE_VERSION + 1}
    doc = TraceDoc.read(data)
    assert not doc.supported and doc.is_trace and doc.outcome.verdict == "fixed"
    with pytest.raises(ValueError, match="unsupported trace version"):
        load_trace(json.dumps(data))
    with pytest.raises(ValueError, match="not an ARCS trace"):
        check_header({"version": 1})
    assert check_header({"format": "arcs-trace", "version": 1}) == 1


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {"rounds": "nope", "outcome": [], "reproduction": 3, "spend": None, "bound": {"x": 1}},
        {"rounds": [None, {"index": True, "candidates": [{"run": {"full": "targets", "targets": 3}}]}]},
        {"outcome": {"verification": {"command": ["x"], "passed": [1, 2]}}, "commands": "c", "version": True},
    ],
)
def test_garbage_never_raises(data: Any) -> None:
    doc = TraceDoc.read(data)
    assert not doc.supported and isinstance(doc.outcome.verdict, str)


def test_long_texts_are_cut() -> None:
    doc = TraceDoc.read({"outcome": {"patch": "p" * (MAX_TEXT + 5)}, "id": "i" * 500})
    assert doc.outcome.patch.endswith("(5 more characters)") and len(doc.id) < 300


def test_one_verification_line() -> None:
    record = {
        "command": "pytest -x",
        "exit_code": 1,
        "duration_s": 1.25,
        "passed": 3,
        "failed": 1,
        "errors": 2,
    }
    line = "`pytest -x` exit 1 in 1.2s (3 passed, 1 failed, 2 errors)"
    assert verification_line(record) == line and trace_module.verification_line(record) == line
    assert Verification.read({**record, "timed_out": True}).line().endswith("2 errors, timed out)")  # type: ignore[union-attr]
    assert verification_line({"exit_code": 0}) == "" and Verification.read({"command": ""}) is None


def test_load_trace_still_round_trips(result: RepairResult) -> None:
    text = dump_trace(result.trace)
    assert dump_trace(load_trace(text)) == text
    with pytest.raises(ValueError, match="not JSON"):
        load_trace("{nope")
