"""``arcs replay`` reruns the loop under the budget :func:`jobs.build.build` gives it (the whole
budget less the change-first reserve, recomputed); a trace recorded before #25 also carries the
loop's own budget in ``repo["loop_budget"]``, which must equal the recomputed one."""

from __future__ import annotations

import json
from pathlib import Path

from bot.settings import Settings
from jobs.fix import FixRequest, fix, replay
from jobs.repair.budget import Budget
from jobs.repair.trace import load_trace
from jobs.replay import budget_divergence
from runners.fake import FakeRunner
from tests.bot.test_cli_fix import fixture_repo, scripted_pytest


def test_replay_runs_the_loop_under_the_recorded_budget(settings: Settings, tmp_path: Path) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    runner = FakeRunner().on("pytest", scripted_pytest)
    trace_path = tmp_path / "t.json"
    request = FixRequest(
        repo=repo, tier="0", trace_out=trace_path, use_index=False, budget=Budget(executions=3)
    )
    report = fix(settings, request, runner=runner)
    # Three runs are not enough for the loop: it stops before its candidate is verified.
    assert report.result.verdict == "budget_exhausted"
    replayed = replay(settings, trace_path, runner=runner)
    assert replayed.divergence is None, replayed.divergence
    assert replayed.replayed is not None and replayed.replayed.outcome.verdict == "budget_exhausted"
    assert replayed.replayed.spend.executions == 3


def test_an_old_loop_budget_that_disagrees_with_the_reserve_is_a_divergence(
    settings: Settings, tmp_path: Path
) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    runner = FakeRunner().on("pytest", scripted_pytest)
    trace_path = tmp_path / "t.json"
    fix(settings, FixRequest(repo=repo, tier="0", trace_out=trace_path, use_index=False), runner=runner)
    data = json.loads(trace_path.read_text(encoding="utf-8"))
    assert "loop_budget" not in data["repo"]
    recorded = load_trace(json.dumps(data))
    # No change-first offers here: the loop's budget is the whole budget.
    assert budget_divergence(recorded, recorded.budget) is None
    data["repo"]["loop_budget"] = dict(data["budget"])
    assert budget_divergence(load_trace(json.dumps(data)), recorded.budget) is None
    for bad in ("3", ["executions"], {"executions": -1}):
        data["repo"]["loop_budget"] = bad
        assert budget_divergence(load_trace(json.dumps(data)), recorded.budget) is None
    data["repo"]["loop_budget"] = {**data["budget"], "executions": 3}
    trace_path.write_text(json.dumps(data), encoding="utf-8")
    got = replay(settings, trace_path, runner=runner)
    assert got.divergence is not None and got.divergence.where == "budget", got.divergence
    assert got.replayed is None
