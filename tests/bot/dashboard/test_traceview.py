"""The trace viewer's reading of trace JSON: the real shape, and anything else without raising."""

from __future__ import annotations

from typing import Any

import pytest

from bot.dashboard.traceview import MAX_TEXT, run_view, summary_view, trace_view
from tests.bot.dashboard.conftest import NOW
from tests.bot.dashboard.seed import make_trace


@pytest.fixture(scope="module")
def trace() -> dict[str, Any]:
    return make_trace(NOW)


def test_a_real_trace(trace: dict[str, Any]) -> None:
    view = trace_view(trace)
    assert view.id == "seed-trace-0001" and view.verdict == "fixed" and view.fixed
    assert [r.number for r in view.rounds] == [1, 2]
    first, second = view.rounds
    assert [c.id for c in first.candidates] == ["r1c1", "r1c2"]
    assert first.candidates[0].status == "rejected by targets"
    assert first.candidates[1].status == "rejected by regressions"
    assert second.candidates[0].submittable and view.chosen == second.candidates[0].id
    assert first.tokens == 2500 and first.usd == pytest.approx(0.023)
    assert any(e.score == pytest.approx(0.91) and e.location == "calc/core.py:1-2" for e in first.evidence)
    assert first.queries and first.queries[0].hits[0].why == "bm25, frame"
    assert view.tests_before is not None and view.tests_before.text == "2 passed, 1 failed"
    assert view.tests_after is not None and view.tests_after.failing == ()
    assert [g.gate for g in view.gates][-2:] == ["regressions", "verification"]
    assert {b.name for b in view.bound} >= {"usd", "tokens"}


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"rounds": "nope", "outcome": [], "reproduction": 3, "spend": None, "bound": {"x": 1}},
        {"rounds": [None, 1, {"index": "x", "candidates": [{"gates": [None, {"gate": 1}]}], "usage": "?"}]},
        {
            "rounds": [
                {"evidence": [{"score": "high", "start_line": 2.5}], "retrieval": {"queries": [{"hits": 1}]}}
            ]
        },
        {"outcome": {"tests_after": {"passed": "many", "failed": [1, 2]}}, "tiers": "large"},
    ],
)
def test_garbage_never_raises(data: dict[str, Any]) -> None:
    view = trace_view(data)
    assert view.verdict in ("", "fixed")
    for r in view.rounds:
        for c in r.candidates:
            assert isinstance(c.status, str)


def test_long_texts_are_cut(trace: dict[str, Any]) -> None:
    trace = {**trace, "rounds": [{**trace["rounds"][0], "prompt": "x" * (MAX_TEXT + 10)}]}
    prompt = trace_view(trace).rounds[0].prompt
    assert len(prompt) < MAX_TEXT + 100 and prompt.endswith("(10 more characters)")


def test_run_view_reads_lists_and_counts() -> None:
    full = run_view({"passed": ["a", "b"], "failed": ["c"], "errors": [], "timed_out": True})
    assert full is not None and (full.passed, full.failed, full.failing) == (2, 1, ("c",))
    assert full.text == "2 passed, 1 failed, timed out"
    counts = run_view({"passed": 5, "failed": 0, "errors": 1, "failing": ["d"]})
    assert counts is not None and counts.text == "5 passed, 0 failed, 1 errors"
    assert run_view(None) is None and run_view("x") is None


def test_summary_view() -> None:
    assert summary_view(None) is None and summary_view({}) is None
    view = summary_view({"trace_id": "t", "gates": [{"gate": "syntax", "passed": True}], "candidates": 3})
    assert view is not None and view.trace_id == "t" and view.gates[0].passed and view.candidates == 3
