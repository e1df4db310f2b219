"""``arcs replay`` reruns the loop under the budget the loop itself ran under: ``repo["loop_budget"]``
when runs outside the loop (tier-0 formatter autofix) were held back from it, not the whole
budget that :meth:`jobs.culprit.ChangeOutcome.apply` records as ``trace.budget``."""

from __future__ import annotations

import json
from pathlib import Path

from bot.settings import Settings
from jobs.fix import FixRequest, fix, replay
from jobs.repair.budget import Budget
from jobs.repair.trace import load_trace
from jobs.replay import loop_budget_of
from runners.fake import FakeRunner
from tests.bot.test_cli_fix import fixture_repo, scripted_pytest


def test_replay_runs_the_loop_under_the_recorded_loop_budget(settings: Settings, tmp_path: Path) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    runner = FakeRunner().on("pytest", scripted_pytest)
    trace_path = tmp_path / "t.json"
    request = FixRequest(
        repo=repo, tier="0", trace_out=trace_path, use_index=False, budget=Budget(executions=3)
    )
    report = fix(settings, request, runner=runner)
    # Three runs are not enough for the loop: it stops before its candidate is verified.
    assert report.result.verdict == "budget_exhausted"
    # What ChangeOutcome.apply writes when the loop got less than the whole budget: the loop's
    # own bound in repo["loop_budget"], the whole budget as the trace's budget.
    data = json.loads(trace_path.read_text(encoding="utf-8"))
    data["repo"]["loop_budget"] = dict(data["budget"])
    data["budget"] = {**data["budget"], "executions": 20}
    trace_path.write_text(json.dumps(data), encoding="utf-8")
    recorded = load_trace(trace_path.read_text(encoding="utf-8"))
    assert recorded.budget.executions == 20 and loop_budget_of(recorded).executions == 3

    replayed = replay(settings, trace_path, runner=runner)
    # Under the whole budget (20 runs) the loop would go on and end otherwise.
    assert replayed.divergence is None, replayed.divergence
    assert replayed.replayed is not None and replayed.replayed.outcome.verdict == "budget_exhausted"
    assert replayed.replayed.spend.executions == 3


def test_loop_budget_of_falls_back_to_the_traces_budget(settings: Settings, tmp_path: Path) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    runner = FakeRunner().on("pytest", scripted_pytest)
    trace_path = tmp_path / "t.json"
    fix(settings, FixRequest(repo=repo, tier="0", trace_out=trace_path, use_index=False), runner=runner)
    data = json.loads(trace_path.read_text(encoding="utf-8"))
    assert "loop_budget" not in data["repo"]
    recorded = load_trace(json.dumps(data))
    assert loop_budget_of(recorded) == recorded.budget
    for bad in ("3", ["executions"], {"executions": -1}):
        data["repo"]["loop_budget"] = bad
        garbled = load_trace(json.dumps(data))
        assert loop_budget_of(garbled) == garbled.budget
