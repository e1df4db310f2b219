"""The ARCS controller with in-repo fakes: tiers, halting, budgets, best-so-far, gates, quality flow."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from indexing.model import Chunk, Query, SearchHit
from jobs.repair.budget import Budget
from jobs.repair.fakes import (
    FakeClock,
    FakeRetriever,
    FakeWorkbench,
    ScriptedLLM,
    ScriptedProposer,
    outcome,
    replace_proposal,
)
from jobs.repair.llm import LLMError, scripted_response
from jobs.repair.loop import LoopConfig, RepairLoop, RepairResult
from jobs.repair.model import Edit, Failure, Frame, Proposal, Usage
from jobs.repair.ports import ProposalRequest
from jobs.repair.roles import CLARIFY_TOOL, PLAN_TOOL, TEST_TOOL, TEST_VERDICT_TOOL, VERDICT_TOOL
from jobs.repair.task import RepairTask
from jobs.repair.tier0.templates import TemplateProposer
from jobs.repair.tiers import LARGE, MEDIUM, SMALL, TIER0, TierUnavailable, is_projection, resolve_tiers
from jobs.repair.trace import compare_outcomes, dump_trace, load_trace
from jobs.repair.workbench import TestOutcome

CORE = "calc/core.py"
FILES = {
    CORE: "def is_adult(age):\n    return age > 18\n\n\ndef double(x):\n    return x * 2\n",
    "tests/test_core.py": (
        "from calc.core import double, is_adult\n\n\n"
        "def test_adult():\n    assert is_adult(18)\n\n\n"
        "def test_child():\n    assert not is_adult(3)\n\n\n"
        "def test_double():\n    assert double(2) == 4\n"
    ),
}
T = "tests/test_core.py::test_adult"
CHILD = "tests/test_core.py::test_child"
DOUBLE = "tests/test_core.py::test_double"
FAILURE = Failure(
    T, "AssertionError", "assert False\n +  where False = is_adult(18)", "tests/test_core.py", 5,
    (Frame("tests/test_core.py", 5, "test_adult"),),
)  # fmt: skip
BASE = outcome([CHILD, DOUBLE], {T: FAILURE})
ALL_PASS = outcome([T, CHILD, DOUBLE])

FIX = replace_proposal(CORE, "return age > 18", "return age >= 18")
FIX_BIG = replace_proposal(
    CORE, "return age > 18", "return age >= 18  # adults are 18 or older\n    # (inclusive)"
)
NOOP = replace_proposal(CORE, "return age > 18", "return age > 19")
BREAK = replace_proposal(CORE, "return age > 18", "return True")
HALF = replace_proposal(CORE, "return x * 2", "return x + x")


def judge(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
    """The fake test suite: evaluates the candidate's is_adult on the three tests."""
    core = files[CORE]
    if "return True" in core:
        return outcome([T, DOUBLE], {CHILD: Failure(CHILD, "AssertionError", "assert not True")})
    if "age >= 18" in core:
        return ALL_PASS
    return outcome([CHILD, DOUBLE], {T: FAILURE})


def make(
    proposer: Any,
    *,
    llm: Any = None,
    base: TestOutcome | Sequence[TestOutcome] = BASE,
    clock: FakeClock | None = None,
    run_s: float = 0.0,
    config: LoopConfig | None = None,
    retriever: Any = None,
    files: Mapping[str, str] = FILES,
    judge: Any = judge,
) -> tuple[RepairLoop, FakeWorkbench]:
    clock = clock or FakeClock()
    wb = FakeWorkbench(files, base=base, judge=judge, clock=clock, run_s=run_s)
    loop = RepairLoop(retriever, proposer, wb, clock, llm=llm, config=config or LoopConfig())
    return loop, wb


def ci_task() -> RepairTask:
    return RepairTask(kind="ci", test_command="pytest")


def assert_bound(result: RepairResult) -> None:
    bound = result.trace.bound()
    assert result.trace.bound_held, bound
    for row in bound.values():
        assert row["spent"] <= row["budget"]


# --------------------------------------------------------------------------- tiers


def test_tiers_are_strict_projections() -> None:
    assert is_projection(SMALL, MEDIUM) and is_projection(MEDIUM, LARGE) and is_projection(SMALL, LARGE)
    assert not is_projection(LARGE, SMALL) and not is_projection(MEDIUM, SMALL)
    assert (SMALL.k, SMALL.plan, SMALL.rounds) == (0, False, 1)
    assert (MEDIUM.k, MEDIUM.plan, MEDIUM.rounds) == (0, True, 1)
    assert (LARGE.k, LARGE.plan, LARGE.max_subgoals, LARGE.rounds) == (10, True, 4, 5)
    assert resolve_tiers("auto", has_llm=True).names == ("small", "large")
    assert resolve_tiers("auto", has_llm=False).names == ("0",)
    with pytest.raises(TierUnavailable, match="ANTHROPIC_API_KEY"):
        resolve_tiers("large", has_llm=False)


def hit(path: str, start: int, text: str, score: float) -> SearchHit:
    return SearchHit(Chunk(path, "python", "function", "f", f"{path}.f", start, start + 2, text), score)


def long_issue() -> RepairTask:
    # Long enough for the planner gate (roles.should_plan) to let the planner run.
    body = "Adults are people aged 18 or more. " * 20
    return RepairTask.issue("is_adult is wrong at the boundary", body, test_command="pytest")


def plan_reply() -> Any:
    return scripted_response(
        tool=(PLAN_TOOL.name, {"contract": "is_adult(int) -> bool", "sketch": "age >= 18",
                               "subgoals": ["boundary comparison in is_adult", "age threshold constant"]})
    )  # fmt: skip


@pytest.mark.parametrize("tier", ["small", "medium", "large"])
def test_each_tier_uses_only_its_projection(tier: str) -> None:
    llm = ScriptedLLM([plan_reply()])
    retriever = FakeRetriever([hit(CORE, 1, "def is_adult(age):\n    return age > 18\n", 0.9)])
    proposer = ScriptedProposer([[NOOP, NOOP], [NOOP], [NOOP], [NOOP], [NOOP]])
    loop, _ = make(proposer, llm=llm, retriever=retriever)
    task = replace(long_issue(), target_tests=(T,))
    result = loop.run(task, Budget(), tier)  # type: ignore[arg-type]
    rounds = result.trace.rounds
    first = proposer.requests[0]
    if tier == "small":
        assert len(rounds) == 1 and first.plan == () and retriever.queries == [] and first.n == 1
    elif tier == "medium":
        assert len(rounds) == 1 and first.plan == (
            "boundary comparison in is_adult",
            "age threshold constant",
        )
        assert retriever.queries == [] and all(
            e.source != "code" or e.id.startswith("frame:") for e in first.evidence
        )
    else:
        assert len(rounds) == 5 and first.n == 2
        assert [q.text for q in retriever.queries[:2]] == list(first.plan)  # plan-conditioned sub-queries
        assert any(e.id == f"{CORE}:1-3" for e in first.evidence)
        # retrieval is refreshed from feedback: later rounds add feedback/code formulations
        kinds = [q["formulation"] for q in rounds[1].retrieval["queries"]]
        assert "feedback" in kinds and "code" in kinds
    assert result.verdict == "budget_exhausted"


def test_planner_is_gated_off_for_short_specs() -> None:
    llm = ScriptedLLM([])  # any call would fail the test (no script)
    proposer = ScriptedProposer([[NOOP]])
    loop, _ = make(proposer, llm=llm)
    result = loop.run(ci_task(), Budget(), "medium")
    assert result.trace.rounds[0].plan["source"] == "gated"
    assert llm.requests == []


def test_termination_within_b_rounds() -> None:
    proposer = ScriptedProposer(
        lambda r: [replace_proposal(CORE, "return age > 18", f"return age > {19 + r.round}")]
    )
    loop, _ = make(proposer, llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(iterations=50), "large")
    assert len(result.trace.rounds) == LARGE.rounds == 5
    assert result.verdict == "budget_exhausted" and "5 rounds" in result.reason
    assert_bound(result)


def test_halts_on_the_first_round_with_a_submittable_candidate() -> None:
    proposer = ScriptedProposer([[NOOP, FIX], [FIX]])
    loop, wb = make(proposer, llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(), "large")
    assert result.fixed and result.verdict == "fixed" and len(result.trace.rounds) == 1
    assert "age >= 18" in result.patch
    gates = ["applies", "syntax", "policy", "size", "threats", "targets", "regressions", "verification"]
    assert [g.gate for g in result.gates] == gates
    assert all(g.passed for g in result.gates)
    assert result.tests_after is not None and set(result.tests_after.passed) == {T, CHILD, DOUBLE}
    # reproduction (1) + triage (2) + NOOP targets (1) + FIX targets (1) + FIX regression run (1)
    assert wb.executions == result.spend.executions == 6


def test_no_key_auto_uses_tier0_with_a_notice() -> None:
    loop, _ = make(TemplateProposer())
    result = loop.run(ci_task(), Budget(), "auto")
    assert result.tiers == ("0",)
    assert any("ANTHROPIC_API_KEY" in n and "tier 0" in n for n in result.notices)
    assert result.fixed and "age >= 18" in result.patch
    assert result.spend.tokens == 0 and result.spend.usd == 0


def test_llm_tier_without_llm_is_a_configuration_error() -> None:
    loop, wb = make(ScriptedProposer([]))
    with pytest.raises(TierUnavailable):
        loop.run(ci_task(), Budget(), "small")
    assert wb.executions == 0


def test_auto_escalates_small_to_large() -> None:
    proposer = ScriptedProposer(
        [[NOOP], [replace_proposal(CORE, "return age > 18", "return age > 20")], [FIX]]
    )
    loop, _ = make(proposer, llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(), "auto")
    assert result.tiers == ("small", "large")
    assert [r.tier for r in result.trace.rounds] == ["small", "large", "large"]
    assert result.fixed
    # the large tier starts from the small tier's feedback
    assert proposer.requests[1].feedback and proposer.requests[1].feedback[-1].round == 0


# --------------------------------------------------------------------------- reproduce first


def test_not_reproducible_stops_at_zero_cost() -> None:
    proposer = ScriptedProposer([[FIX]])
    loop, wb = make(proposer, base=ALL_PASS, llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(), "auto")
    assert result.verdict == "not_reproducible" and not result.fixed and result.patch == ""
    assert proposer.requests == [] and result.rounds == 0
    assert result.spend.tokens == 0 and result.spend.usd == 0 and wb.executions == 1


def test_given_targets_that_pass_are_not_reproducible() -> None:
    loop, _ = make(ScriptedProposer([[FIX]]))
    result = loop.run(replace(ci_task(), target_tests=(CHILD,)), Budget(), "0")
    assert result.verdict == "not_reproducible" and "target tests pass" in result.reason


def test_tests_named_by_the_ci_log_become_the_targets() -> None:
    two_failing = outcome([DOUBLE], {T: FAILURE, CHILD: Failure(CHILD, "AssertionError", "env")})
    # CI ran from a subdirectory: its ids carry a prefix; the local run's do not.
    loop, _ = make(ScriptedProposer([[FIX]]), base=two_failing)
    task = replace(ci_task(), ci_tests=(f"pkg/{T}",), hints=(("calc/core.py", 2),))
    result = loop.run(task, Budget(), "0")
    assert result.trace.reproduction.targets == [T]
    # None of the CI's tests fail here: every local failure is a target.
    loop, _ = make(ScriptedProposer([[FIX]]), base=two_failing)
    result = loop.run(replace(ci_task(), ci_tests=("tests/test_other.py::test_x",)), Budget(), "0")
    assert sorted(result.trace.reproduction.targets) == sorted([T, CHILD])
    # The task (with the CI hints) survives the trace's JSON.
    again = load_trace(dump_trace(result.trace))
    assert again.task.ci_tests == ("tests/test_other.py::test_x",)


def test_flaky_failures_stop_at_zero_cost() -> None:
    proposer = ScriptedProposer([[FIX]])
    loop, wb = make(proposer, base=[BASE, ALL_PASS], llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(), "auto")
    assert result.verdict == "flaky" and "passed when re-run" in result.reason
    assert result.trace.reproduction.flaky == [T]
    assert proposer.requests == [] and result.spend.tokens == 0 and result.spend.usd == 0
    assert wb.calls[1].select == (T,)  # the re-run selects the failing test


def test_no_budget_for_reproduction() -> None:
    loop, wb = make(ScriptedProposer([[FIX]]))
    result = loop.run(ci_task(), Budget(executions=0), "0")
    assert result.verdict == "budget_exhausted" and wb.executions == 0
    assert_bound(result)


# --------------------------------------------------------------------------- budgets


def costly(tokens: int, usd: float) -> ScriptedProposer:
    return ScriptedProposer(
        lambda r: [
            replace_proposal(CORE, "return age > 18", f"return age > {30 + r.round * 2 + i}", usage_tokens=tokens, usd=usd)
            for i in range(r.n)
        ]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("dimension", "budget", "tokens", "usd", "run_s"),
    [
        ("iterations", Budget(iterations=2), 0, 0.0, 0.0),
        ("tokens", Budget(tokens=1_000), 300, 0.0, 0.0),
        ("usd", Budget(usd=0.05), 0, 0.02, 0.0),
        ("wall_s", Budget(wall_s=45.0), 0, 0.0, 4.0),
        ("executions", Budget(executions=6), 0, 0.0, 0.0),
    ],
)
def test_budget_stops_on_every_dimension(
    dimension: str, budget: Budget, tokens: int, usd: float, run_s: float
) -> None:
    clock = FakeClock(tick=0.01)
    proposer = costly(tokens, usd)
    loop, wb = make(proposer, llm=ScriptedLLM([]), clock=clock, run_s=run_s)
    result = loop.run(ci_task(), budget, "large")
    assert not result.fixed and result.verdict == "budget_exhausted"
    assert_bound(result)
    spend = result.spend.as_dict()
    limit = budget.as_dict()[dimension]
    # the binding dimension got close to its bound (it is what stopped the search)
    assert spend[dimension] <= limit
    if dimension in ("iterations", "executions"):
        assert spend[dimension] == limit
    if dimension != "iterations":
        assert f"budget exhausted: {dimension}" in result.reason
    assert wb.executions == result.spend.executions
    data = json.loads(dump_trace(result.trace))
    assert data["bound_held"] is True and data["bound"][dimension]["held"] is True
    # the proposer was only ever offered what was left, with the safety margin
    for offered in proposer.budgets:
        assert offered.tokens <= budget.tokens and offered.usd <= budget.usd


def test_best_so_far_never_decreases() -> None:
    three = replace_proposal(
        CORE, "return age > 18", "return age > 18 or age == 18"
    )  # passes all (judge: no)
    del three
    script = [[BREAK], [NOOP], [HALF], [FIX]]
    proposer = ScriptedProposer(script)
    loop, _ = make(proposer, llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(), "large")
    series = result.trace.best_series()
    assert all(b is not None for b in series)
    assert series == sorted(series)  # type: ignore[type-var]
    assert series[0] == 2  # BREAK: target fixed, 1 of 2 others still passing
    assert series[-1] == 3 and result.fixed


def test_gates_reject_a_test_deleting_patch_before_running_it() -> None:
    delete_test = Proposal(
        edits=(Edit("tests/test_core.py", old="def test_adult():\n    assert is_adult(18)\n", new=""),),
        explanation="remove the failing test",
        proposer="scripted",
    )
    skip_test = Proposal(
        edits=(
            Edit("tests/test_core.py", old="def test_adult():", new="@pytest.mark.skip\ndef test_adult():"),
        ),
        proposer="scripted",
    )
    proposer = ScriptedProposer([[delete_test], [skip_test]])
    loop, wb = make(proposer, llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(iterations=2), "large")
    cands = result.trace.candidates
    assert [c.rejected_by for c in cands] == [["policy"], ["policy"]]
    assert "deletes or disables test" in cands[0].gate("policy").detail  # type: ignore[union-attr]
    assert not result.fixed
    assert all(call.patch_key == "" for call in wb.calls)  # never executed
    fb = result.trace.rounds[0].feedback
    assert fb is not None and any(g.startswith("policy") for g in fb.gate_failures)


def test_regressions_reject_a_patch_that_fixes_the_target() -> None:
    proposer = ScriptedProposer([[BREAK]])
    loop, _ = make(proposer, llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(), "small")
    assert result.verdict == "gates_rejected" and "regressions" in result.reason
    cand = result.trace.candidates[0]
    assert cand.gate("targets").passed and not cand.gate("regressions").passed  # type: ignore[union-attr]


def test_selection_prefers_most_tests_then_smallest_diff_then_votes() -> None:
    proposer = ScriptedProposer([[FIX_BIG, FIX]])
    loop, _ = make(proposer, llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(), "large")
    assert result.fixed and result.trace.outcome.candidate == "r1c2"  # the smaller of two submittable


def test_duplicate_patches_are_not_rerun_and_vote() -> None:
    same = replace_proposal(CORE, "return age > 18", "return age >=  18")  # whitespace variant of FIX
    proposer = ScriptedProposer([[FIX, same]])
    loop, wb = make(proposer, llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(), "large")
    assert result.trace.candidates[1].duplicate_of == "r1c1"
    assert len([c for c in wb.calls if c.patch_key]) == 2  # FIX's targets + regression runs only
    assert result.candidates == 1


def test_errors_are_data() -> None:
    bad_edit = replace_proposal(CORE, "no such text", "x")

    def script(request: ProposalRequest) -> list[Proposal]:
        if request.round == 0:
            return [bad_edit, Proposal(edits=(), explanation="model returned no usable edits: truncated")]
        if request.round == 1:
            raise RuntimeError("proposer exploded")
        return [FIX]

    loop, _ = make(ScriptedProposer(script), llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(), "large")
    r0, r1 = result.trace.rounds[:2]
    assert (
        r0.candidates[0].rejected_by == ["applies"]
        and "old text not found" in r0.candidates[0].gates[0].detail
    )
    assert r0.feedback is not None and any("old text not found" in e for e in r0.feedback.edit_errors)
    assert r1.proposer_errors == ["RuntimeError: proposer exploded"]
    assert result.fixed  # the loop went on


def test_fatal_llm_errors_stop_the_search() -> None:
    class Failing(ScriptedProposer):
        last_errors: list[LLMError]

        def propose(self, request: ProposalRequest, remaining: Budget) -> list[Proposal]:
            self.last_errors = [LLMError("auth", "HTTP 401: invalid x-api-key", retryable=False)]
            return []

    loop, _ = make(Failing([]), llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(), "large")
    assert result.verdict == "proposer_failed" and "401" in result.reason and len(result.trace.rounds) == 1


def test_feedback_reaches_the_next_round_and_tried_keys_accumulate() -> None:
    proposer = ScriptedProposer([[NOOP], [FIX]])
    loop, _ = make(proposer, llm=ScriptedLLM([]))
    loop.run(ci_task(), Budget(), "large")
    second = proposer.requests[1]
    assert second.feedback[-1].failures[0].test_id == T
    assert len(second.tried) == 1
    assert second.task.failures and second.task.failures[0].test_id == T  # observed failures fill the task


def test_tier0_templates_fix_it_and_the_trace_is_deterministic() -> None:
    def once() -> RepairResult:
        loop, _ = make(TemplateProposer(), clock=FakeClock(tick=0.5))
        return loop.run(ci_task(), Budget(), "0")

    a, b = once(), once()
    assert a.fixed and compare_outcomes(a.trace, b.trace) is None

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: strip(v) for k, v in node.items() if k not in ("timings", "wall_s", "spent", "duration_s")
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    assert strip(a.trace.to_json()) == strip(b.trace.to_json())
    assert load_trace(dump_trace(a.trace)).to_json() == a.trace.to_json()


def test_parallel_batches_give_the_same_trace() -> None:
    script = [[NOOP, HALF, BREAK, FIX]]
    a = make(ScriptedProposer(script, cap_at_n=False), llm=ScriptedLLM([]), config=LoopConfig(parallel=1))[0]
    b = make(ScriptedProposer(script, cap_at_n=False), llm=ScriptedLLM([]), config=LoopConfig(parallel=3))[0]
    a, b = a.run(ci_task(), Budget(), "large"), b.run(ci_task(), Budget(), "large")
    assert compare_outcomes(a.trace, b.trace) is None and a.fixed and b.fixed


# --------------------------------------------------------------------------- issues: designer, quality checker


def verdict(accept: bool, reasoning: str = "") -> Any:
    return scripted_response(
        tool=(VERDICT_TOOL.name, {
            "tests": [{"test": "t", "expected": "x", "imagined": "x" if accept else "y", "passes": accept}],
            "verdict": "accept" if accept else "reject",
            "reasoning": reasoning or ("looks right" if accept else "adults of exactly 18 are still rejected"),
        })
    )  # fmt: skip


def clarified() -> Any:
    return scripted_response(
        tool=(CLARIFY_TOOL.name, {"clarified_spec": "is_adult(18) must be True",
                                  "misunderstandings": ["18 is an adult"]})
    )  # fmt: skip


def weak(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
    """An issue's world: the suite passes before and after (it does not test the issue)."""
    return ALL_PASS


def issue_task() -> RepairTask:
    return RepairTask.issue("is_adult(18) is False", "An 18 year old is an adult.", test_command="pytest")


def test_quality_checker_clarifier_then_revert() -> None:
    # An issue with no failing test and no test designer: weak tests, the quality checker decides.
    llm = ScriptedLLM([verdict(False), clarified(), verdict(False)])
    proposer = ScriptedProposer([[HALF], [FIX_BIG]])
    loop, _ = make(proposer, llm=llm, base=ALL_PASS, config=LoopConfig(design_tests=False), judge=weak)
    result = loop.run(issue_task(), Budget(), "small")
    assert [r.purpose for r in llm.requests] == ["check_quality", "clarify", "check_quality"]
    assert result.verdict == "reverted" and not result.fixed
    assert result.trace.outcome.candidate == "r1c1" and "x + x" in result.patch  # the best verified one
    assert [r.phase for r in result.trace.rounds] == ["repair", "clarified"]
    assert "Clarified requirements" in proposer.requests[1].task.body
    assert "is_adult(18) must be True" in proposer.requests[1].task.body
    quality = [g for g in result.trace.candidates[0].gates if g.gate == "quality"]
    assert quality and not quality[0].passed
    assert result.spend.tokens == sum(r.usage.tokens for r in [verdict(False), clarified(), verdict(False)])
    assert_bound(result)


def test_quality_checker_accepts_after_clarification() -> None:
    llm = ScriptedLLM([verdict(False), clarified(), verdict(True)])
    proposer = ScriptedProposer([[HALF], [FIX]])
    loop, _ = make(proposer, llm=llm, base=ALL_PASS, config=LoopConfig(design_tests=False), judge=weak)
    result = loop.run(issue_task(), Budget(), "small")
    assert result.fixed and result.trace.outcome.candidate == "r2c1"
    assert [(g.gate, g.passed) for g in result.gates[-2:]] == [("quality", True), ("verification", True)]


def test_issue_without_test_and_without_llm_is_not_reproducible() -> None:
    loop, _ = make(TemplateProposer(), base=ALL_PASS)
    result = loop.run(issue_task(), Budget(), "auto")
    assert result.verdict == "not_reproducible" and "without an LLM" in result.reason


DESIGNED = "from calc.core import is_adult\n\n\ndef test_eighteen_is_adult():\n    assert is_adult(18)\n"
DESIGNED_ID = "tests/test_issue.py::test_eighteen_is_adult"


def designer_judge(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
    result = judge(files, select)
    if "tests/test_issue.py" not in files:
        return result
    if "age >= 18" in files[CORE]:
        return replace(result, passed=(*result.passed, DESIGNED_ID))
    fail = Failure(DESIGNED_ID, "AssertionError", "assert False", "tests/test_issue.py", 5)
    return replace(result, failed=(*result.failed, DESIGNED_ID), failures=(*result.failures, fail))


def test_test_designer_writes_a_reproduction_test_that_joins_the_patch() -> None:
    llm = ScriptedLLM([
        scripted_response(tool=(TEST_TOOL.name, {"path": "tests/test_issue.py", "content": DESIGNED,
                                                 "rationale": "18 must be an adult"})),
        scripted_response(tool=(TEST_VERDICT_TOOL.name, {
            "checks": [{"assertion": "is_adult(18)", "expected_by_spec": "True", "matches": True}],
            "verdict": "accept", "reasoning": "the issue says 18 is an adult"})),
        verdict(True),
    ])  # fmt: skip
    files = {
        **FILES,
        "tests/test_core.py": FILES["tests/test_core.py"].replace(
            "assert is_adult(18)", "assert is_adult(30)"
        ),
    }
    wb = FakeWorkbench(files, base=ALL_PASS, judge=designer_judge)
    loop = RepairLoop(None, ScriptedProposer([[FIX]]), wb, FakeClock(), llm=llm)
    result = loop.run(issue_task(), Budget(), "small")
    rep = result.trace.reproduction
    assert rep.designed_test is not None and rep.designed_test["verdict"] == "accepted"
    assert rep.targets == [DESIGNED_ID]
    assert result.fixed
    assert result.edits[0] == Edit("tests/test_issue.py", kind="create", new=DESIGNED)
    assert "tests/test_issue.py" in result.patch and "age >= 18" in result.patch
    assert [r.purpose for r in llm.requests] == ["design_test", "check_test", "check_quality"]


def test_a_designed_test_that_does_not_fail_on_base_is_discarded() -> None:
    llm = ScriptedLLM([
        scripted_response(tool=(TEST_TOOL.name, {"path": "tests/test_issue.py", "content": DESIGNED,
                                                 "rationale": "r"})),
        scripted_response(tool=(TEST_VERDICT_TOOL.name, {"checks": [], "verdict": "accept", "reasoning": "ok"})),
    ])  # fmt: skip
    wb = FakeWorkbench(FILES, base=ALL_PASS, default=ALL_PASS)
    loop = RepairLoop(None, ScriptedProposer([]), wb, FakeClock(), llm=llm, config=LoopConfig())
    result = loop.run(issue_task(), Budget(iterations=1), "small")
    dt = result.trace.reproduction.designed_test
    assert dt is not None and dt["verdict"].startswith("rejected") and dt["reproduced"] is False
    assert result.trace.reproduction.targets == []


def test_role_calls_are_refused_when_the_budget_cannot_cover_them() -> None:
    llm = ScriptedLLM([])  # a call reaching the model would fail the test
    loop, _ = make(
        ScriptedProposer([[HALF]]), llm=llm, base=ALL_PASS, config=LoopConfig(design_tests=False), judge=weak
    )
    result = loop.run(issue_task(), Budget(tokens=100), "small")
    assert llm.requests == []
    assert result.verdict == "reverted" and "budget" in result.reason
    assert_bound(result)


def test_retrieval_errors_are_recorded_and_the_round_goes_on() -> None:
    def broken(query: Query) -> list[SearchHit]:
        raise RuntimeError("qdrant is down")

    proposer = ScriptedProposer([[FIX]])
    loop, _ = make(proposer, llm=ScriptedLLM([]), retriever=FakeRetriever(broken))
    result = loop.run(ci_task(), Budget(), "large")
    assert result.fixed
    assert "qdrant is down" in result.trace.rounds[0].retrieval["queries"][0]["error"]


def test_loop_config_round_trips() -> None:
    config = LoopConfig(parallel=3, regression_select=("tests/test_core.py",), quality_check="always")
    assert LoopConfig.from_json(json.loads(json.dumps(config.to_json()))) == config


def test_usage_of_proposals_is_accounted() -> None:
    p = replace(FIX, usage=Usage(input_tokens=120, output_tokens=30, usd=0.01, calls=1))
    loop, _ = make(ScriptedProposer([[p]]), llm=ScriptedLLM([]))
    result = loop.run(ci_task(), Budget(), "small")
    assert result.spend.tokens == 150 and result.spend.usd == pytest.approx(0.01)
    assert result.trace.rounds[0].usage.tokens == 150


def test_tier0_is_not_offered_llm_tiers_evidence() -> None:
    proposer = ScriptedProposer([[FIX]])
    loop, _ = make(proposer)
    loop.run(ci_task(), Budget(), "0")
    assert proposer.requests[0].evidence == () and proposer.requests[0].n == TIER0.candidates


def test_run_level_target_is_fixed_by_a_clean_exit_when_the_output_names_no_tests() -> None:
    # A test command whose output has no parser: the baseline is one run-level error ("<run>"),
    # and a correct patch makes the command exit 0 without naming any test.
    broken = outcome(errors=["<run>"])

    def no_ids(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
        return outcome() if "age >= 18" in files[CORE] else outcome(errors=["<run>"])

    loop, _ = make(ScriptedProposer([[FIX]]), base=broken, judge=no_ids)
    task = RepairTask(kind="ci", test_command="python3 check.py", target_tests=("<run>",))
    result = loop.run(task, Budget(iterations=2), tier="0")
    assert result.fixed, result.reason
