"""RepairLoop.run(spec): the RepairSpec value, and the old run(task, budget, tier) signature."""

from __future__ import annotations

import dataclasses

import pytest

from jobs.repair.budget import Budget
from jobs.repair.fakes import ScriptedProposer
from jobs.repair.loop import LoopConfig
from jobs.repair.spec import RepairSpec
from jobs.repair.trace import compare_outcomes
from tests.jobs.repair.test_loop import FIX, ci_task, make


def test_run_takes_a_spec_and_runs_with_its_loop_config() -> None:
    loop, wb = make(ScriptedProposer([[FIX]]))
    spec = RepairSpec(task=ci_task(), budget=Budget(iterations=2), tier="0", loop=LoopConfig(triage_runs=0))
    result = loop.run(spec)
    assert result.fixed and result.verdict == "fixed"
    # the loop was made with the default LoopConfig (two triage re-runs): spec.loop replaced it
    assert result.trace.config["triage_runs"] == 0 and result.trace.reproduction.reruns == []
    assert result.budget == Budget(iterations=2) and result.tiers == ("0",)
    assert wb.executions == result.spend.executions


def test_the_old_signature_is_the_spec_with_the_loops_config() -> None:
    config = LoopConfig(triage_runs=1)
    old, _ = make(ScriptedProposer([[FIX]]), config=config)
    new, _ = make(ScriptedProposer([[FIX]]), config=config)
    a = old.run(ci_task(), Budget(), "0")
    b = new.run(RepairSpec(task=ci_task(), budget=Budget(), tier="0", loop=config))
    assert a.verdict == b.verdict == "fixed"
    assert compare_outcomes(a.trace, b.trace) is None
    assert len(a.trace.reproduction.reruns) == 1


def test_a_spec_is_frozen() -> None:
    spec = RepairSpec(task=ci_task())
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.tier = "0"  # type: ignore[misc]
    assert (spec.budget, spec.tier, spec.loop) == (Budget(), "auto", LoopConfig())
