"""The ARCS controller (seed 000, Algorithm 1) adapted to repository repair.

One :meth:`RepairLoop.run`:

1. **Reproduce first.** Run the suite on the base tree (one execution). Targets are the given
   target tests, else every failure observed. Nothing fails -> ``not_reproducible``. For an issue
   without a failing test, the Test Designer writes a reproduction test and the Test Quality
   Checker keeps it only if it also fails on the base code for a behavioural reason. Triage
   re-runs the targets; failures that do not repeat -> ``flaky``. No LLM spend on either verdict.
2. **Rounds** (per tier, strict projections, :mod:`jobs.repair.tiers`): state S_t = (q_t, s_t,
   last candidate, f_<t). Plan (gated, :mod:`jobs.repair.plan`); retrieve (plan-conditioned, with
   the ARKS query formulations and the failure's ``file:line`` hints, redundancy-filtered, plus
   verified snippets from the in-memory knowledge soup); compose; propose; then per candidate:
   apply -> syntax -> policy -> size gates, execute the targets, and if they pass the regression
   suite; encode the observed failures as feedback (:mod:`jobs.repair.feedback`).
3. **Halt** when a candidate passes every gate (Eq. 4) or the rounds/budget run out; the best
   submittable candidate is chosen by tests passed, then smallest normalized diff, then votes.
   For issue tasks with weak or synthesized tests the LLM Code Quality Checker has the last word;
   on rejection the Clarifier restates the task and the round is regenerated once; still
   rejected -> revert to the best verified candidate (``reverted``).
4. **Interrupt** (optional port): asked before reproduction and before every round; a reason
   (an admin paused the owner, ``/arcs stop``) ends the run with ``interrupted``, no patch, and
   the reason in the trace's notices and outcome.

Budget (every dimension) is checked before each step that spends it; the trace records the spend
and proves the bound (Prop. 3). Best-so-far is tracked with :func:`jobs.repair.select.best_so_far`
(Prop. 1). Errors of proposers, edits, the LLM and the test runs are data in the trace; only a
replay divergence escapes (it means the replayed run is not the recorded one).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from indexing.files import is_test_path
from jobs.repair import roles
from jobs.repair.budget import Budget, Spend
from jobs.repair.diffing import diff_stats, normalize_patch, patch_key
from jobs.repair.edits import AppliedEdits, EditError
from jobs.repair.feedback import (
    QuerySpec,
    encode,
    failure_hints,
    filter_redundancy,
    fit_evidence,
    fit_history,
    formulate_queries,
    frame_context,
    merge_round,
    verified_snippet,
)
from jobs.repair.gates import (
    DEFAULT_DENIED,
    applies_gate,
    policy_gate,
    regression_gate,
    size_gate,
    syntax_gate,
    targets_gate,
)
from jobs.repair.llm import LLM, LLMError, LLMRequest, LLMResponse, estimate_tokens
from jobs.repair.model import Edit, Evidence, Failure, Feedback, GateResult, Proposal, Usage
from jobs.repair.plan import PlanOutcome, make_plan
from jobs.repair.ports import Clock, Interrupt, ProposalRequest, Proposer
from jobs.repair.pricing import price_for
from jobs.repair.prompts import pack_context
from jobs.repair.proposers.replay import ReplayDivergence
from jobs.repair.proposers.templates import proposal_key
from jobs.repair.select import CandidateScore, best_so_far, select_best
from jobs.repair.task import RepairTask
from jobs.repair.tiers import TierConfig, TierRequest, resolve_tiers
from jobs.repair.trace import (
    CandidateRecord,
    ReplayMismatch,
    RoundRecord,
    Trace,
    evidence_to_json,
    hit_to_json,
    usage_to_json,
)
from jobs.repair.workbench import RUN_ERROR_PREFIX, CandidateRun, TestOutcome, Workbench

if TYPE_CHECKING:
    from indexing.model import SearchHit
    from indexing.retriever import Retriever

Verdict = Literal[
    "fixed",
    "partial",
    "environment",
    "not_reproducible",
    "flaky",
    "budget_exhausted",
    "gates_rejected",
    "no_candidates",
    "reverted",
    "proposer_failed",
    "interrupted",
]
QualityMode = Literal["auto", "always", "never"]

# Error types that mean a synthesized test is broken rather than reproducing the issue.
_BROKEN_TEST_TYPES = frozenset(
    {
        "SyntaxError",
        "IndentationError",
        "ImportError",
        "ModuleNotFoundError",
        "NameError",
        "collection",
        "setup",
        "fixture",
        "exit",
        "timeout",
        "ReferenceError",
        "TS2304",
        "E0425",
    }
)
_LANGUAGE_OF_FRAMEWORK = {
    "pytest": "python",
    "unittest": "python",
    "go": "go",
    "cargo": "rust",
    "jest": "javascript",
    "vitest": "typescript",
    "maven": "java",
    "gradle": "java",
}
_FATAL_LLM_ERRORS = frozenset({"auth", "bad_request"})
_BUDGET_DIMENSIONS = frozenset({"iterations", "tokens", "usd", "wall_s", "executions"})


# --- configuration -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GateConfig:
    """Limits and path rules of the non-LLM gates."""

    max_files: int = 10
    max_lines: int = 400
    denied: tuple[str, ...] = DEFAULT_DENIED
    allowed: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class LoopConfig:
    """Controller settings (recorded in the trace so a replay rebuilds the same loop)."""

    gates: GateConfig = field(default_factory=GateConfig)
    test_timeout_s: float = 600.0
    """Wall-clock cap of one test run (further capped by the wall budget left). The reproduction
    run gets it whole; later runs get :attr:`timeout_factor` times the measured baseline duration,
    at least :attr:`timeout_floor_s` and at most this, so a hanging candidate costs seconds."""
    timeout_factor: float = 5.0
    timeout_floor_s: float = 10.0
    hang_probe_s: float = 30.0
    """Timeout of later runs while no run has completed (the baseline itself hung)."""
    pairs: int = 4
    """Tier 0: when no candidate of a round passes every gate, up to this many pairs of candidates
    that each fixed different targets are combined and tried (0: never)."""
    triage_runs: int = 2
    """Re-runs of the failing targets on the base code before repairing (0: no triage)."""
    regression_select: tuple[str, ...] | None = None
    """Test ids the regression gate runs (None: the full suite)."""
    quality_check: QualityMode = "auto"
    """``auto``: the Code Quality Checker runs for issue tasks with weak or synthesized tests."""
    design_tests: bool = True
    """Let the Test Designer write a reproduction test for issues without a failing test."""
    history_chars: int = 12_000
    evidence_chars: int = 40_000
    prompt_chars: int = 60_000
    llm_safety: float = 0.8
    """Share of the remaining tokens/USD a proposer is told it may spend (its input estimate is
    chars/4; the margin keeps the real spend under the bound)."""
    min_wall_s: float = 1.0
    """Reserve kept for the bookkeeping after a test run: a run is started only with at least
    twice this much wall budget left, and its timeout leaves this much over."""
    max_frame_context: int = 6
    soup_size: int = 2
    """Verified snippets kept in the knowledge soup."""
    parallel: int = 1
    """Target runs of up to this many candidates of a round execute concurrently. Batches are
    fixed before they run, so the trace does not depend on timing."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "gates": {
                "max_files": self.gates.max_files,
                "max_lines": self.gates.max_lines,
                "denied": list(self.gates.denied),
                "allowed": None if self.gates.allowed is None else list(self.gates.allowed),
            },
            "test_timeout_s": self.test_timeout_s,
            "timeout_factor": self.timeout_factor,
            "timeout_floor_s": self.timeout_floor_s,
            "hang_probe_s": self.hang_probe_s,
            "pairs": self.pairs,
            "triage_runs": self.triage_runs,
            "regression_select": None if self.regression_select is None else list(self.regression_select),
            "quality_check": self.quality_check,
            "design_tests": self.design_tests,
            "history_chars": self.history_chars,
            "evidence_chars": self.evidence_chars,
            "prompt_chars": self.prompt_chars,
            "llm_safety": self.llm_safety,
            "min_wall_s": self.min_wall_s,
            "max_frame_context": self.max_frame_context,
            "soup_size": self.soup_size,
            "parallel": self.parallel,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoopConfig:
        """Inverse of :meth:`to_json` (unknown keys ignored, missing keys default)."""
        g = dict(data.get("gates", {}))
        default = cls()
        allowed = g.get("allowed")
        select = data.get("regression_select")
        return cls(
            gates=GateConfig(
                max_files=int(g.get("max_files", default.gates.max_files)),
                max_lines=int(g.get("max_lines", default.gates.max_lines)),
                denied=tuple(g.get("denied", default.gates.denied)),
                allowed=None if allowed is None else tuple(allowed),
            ),
            test_timeout_s=float(data.get("test_timeout_s", default.test_timeout_s)),
            timeout_factor=float(data.get("timeout_factor", default.timeout_factor)),
            timeout_floor_s=float(data.get("timeout_floor_s", default.timeout_floor_s)),
            hang_probe_s=float(data.get("hang_probe_s", default.hang_probe_s)),
            # Traces recorded before pairs existed never combined candidates.
            pairs=int(data.get("pairs", 0)),
            triage_runs=int(data.get("triage_runs", default.triage_runs)),
            regression_select=None if select is None else tuple(select),
            quality_check=data.get("quality_check", default.quality_check),
            design_tests=bool(data.get("design_tests", default.design_tests)),
            history_chars=int(data.get("history_chars", default.history_chars)),
            evidence_chars=int(data.get("evidence_chars", default.evidence_chars)),
            prompt_chars=int(data.get("prompt_chars", default.prompt_chars)),
            llm_safety=float(data.get("llm_safety", default.llm_safety)),
            min_wall_s=float(data.get("min_wall_s", default.min_wall_s)),
            max_frame_context=int(data.get("max_frame_context", default.max_frame_context)),
            soup_size=int(data.get("soup_size", default.soup_size)),
            parallel=int(data.get("parallel", default.parallel)),
        )


# --- result --------------------------------------------------------------------------------------


def _tests_json(outcome: TestOutcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {
        "passed": len(outcome.passed),
        "failed": len(outcome.failed),
        "errors": len(outcome.errors),
        "failing": [*outcome.failed, *outcome.errors][:50],
    }


@dataclass(frozen=True, slots=True)
class RepairResult:
    """What a repair attempt produced; ``trace`` holds the full record."""

    verdict: Verdict
    reason: str
    fixed: bool
    patch: str
    """The unified diff of the returned candidate ('' when none); for ``reverted`` it is the best
    verified candidate, which the quality checker did not accept."""
    edits: tuple[Edit, ...]
    explanation: str
    tiers: tuple[str, ...]
    rounds: int
    candidates: int
    tests_before: TestOutcome | None
    tests_after: TestOutcome | None
    gates: tuple[GateResult, ...]
    usage: Usage
    spend: Spend
    budget: Budget
    notices: tuple[str, ...]
    trace: Trace
    stopped_by: str = ""
    """What ended the search when no candidate was accepted: a budget dimension (``usd``,
    ``tokens``, ``iterations``, ``wall_s``, ``executions``), ``rounds``, ``candidates``, or ''."""
    verification: Mapping[str, Any] = field(default_factory=dict)
    """The final verification run of the returned candidate (the exact command): ``{candidate,
    command, exit_code, duration_s, passed, failed, errors, timed_out, passed_verification,
    pre_existing, new_failures}``; empty when nothing was verified."""
    pre_existing: tuple[str, ...] = ()
    """``partial``: the tests that still fail and already failed before the change."""

    def to_json(self, *, trace_path: str = "") -> dict[str, Any]:
        """The ``arcs fix --json`` document."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "fixed": self.fixed,
            "patch": self.patch,
            "tier": self.tiers[-1] if self.tiers else self.trace.tier_requested,
            "tiers": list(self.tiers),
            "rounds": self.rounds,
            "candidates": self.candidates,
            "tests_before": _tests_json(self.tests_before),
            "tests_after": _tests_json(self.tests_after),
            "gates": [{"gate": g.gate, "passed": g.passed, "detail": g.detail} for g in self.gates],
            "tokens": self.spend.tokens,
            "cost_usd": round(self.spend.usd, 6),
            "executions": self.spend.executions,
            "duration_s": round(self.spend.wall_s, 3),
            "budget_held": self.trace.bound_held,
            "notices": list(self.notices),
            "verification": dict(self.verification) or None,
            "pre_existing_failures": list(self.pre_existing),
            "commands": dict(self.trace.commands) or None,
            "trace_path": trace_path,
        }


# --- LLM guard -----------------------------------------------------------------------------------


class BudgetRefused(LLMError):
    """A role call that would not fit in what is left of the budget (nothing was sent)."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_request", message, retryable=False)


class _GuardedLLM:
    """Wraps the roles' LLM: refuses calls that cannot fit the remaining tokens/USD, lowers
    ``max_tokens`` to what is affordable, and accounts every answered call's usage."""

    # Input tokens are estimated at chars/3 (code tokenizes denser than prose) plus overhead.
    _OVERHEAD_TOKENS = 128
    _MIN_OUTPUT = 256

    def __init__(self, inner: LLM, state: _State) -> None:
        self.inner = inner
        self.state = state

    @property
    def model(self) -> str:
        """The inner model id."""
        return self.inner.model

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Forward ``request`` if it fits the remaining budget; account its usage."""
        remaining = self.state.remaining()
        input_tokens = estimate_tokens(request.chars * 4 // 3) + self._OVERHEAD_TOKENS
        by_tokens = remaining.tokens - input_tokens
        price = price_for(self.inner.model)
        input_usd = input_tokens * max(price.input, price.cache_write) / 1_000_000
        per_output = price.output / 1_000_000
        by_usd = int((remaining.usd - input_usd) / per_output) if per_output > 0 else by_tokens
        allowed = min(request.max_tokens, by_tokens, by_usd)
        if allowed < min(self._MIN_OUTPUT, request.max_tokens):
            dim = "tokens" if by_tokens <= by_usd else "usd"
            raise BudgetRefused(f"budget: not enough {dim} left for {request.purpose or 'a model call'}")
        response = self.inner.complete(replace(request, max_tokens=allowed))
        self.state.usage = self.state.usage + response.usage
        return response


def _named_in(test_id: str, names: Sequence[str]) -> bool:
    """Whether ``test_id`` is one of ``names``, allowing for a different path prefix (CI may run
    from another directory: ``pkg/tests/test_a.py::t`` is ``tests/test_a.py::t``)."""
    return any(test_id == n or test_id.endswith("/" + n) or n.endswith("/" + test_id) for n in names)


# --- run state -----------------------------------------------------------------------------------


@dataclass
class _Scored:
    record: CandidateRecord
    score: CandidateScore
    outcome: TestOutcome | None
    """The most complete run (full suite when it ran, else the targets run)."""


@dataclass
class _Pending:
    cand: CandidateRecord
    applied: AppliedEdits
    order: int
    first: TestOutcome | None = None
    stopped: str = ""


@dataclass
class _State:
    task: RepairTask
    budget: Budget
    clock: Clock
    started: float
    trace: Trace
    usage: Usage = field(default_factory=Usage)
    executions: int = 0
    iterations: int = 0
    baseline: TestOutcome | None = None
    targets: tuple[str, ...] = ()
    baseline_passed: frozenset[str] = frozenset()
    baseline_errors: frozenset[str] = frozenset()
    synthesized: bool = False
    tests_text: str = ""
    extra_edits: tuple[Edit, ...] = ()
    history: list[Feedback] = field(default_factory=list)
    tried: set[str] = field(default_factory=set)
    by_proposal: dict[str, str] = field(default_factory=dict)
    by_patch: dict[str, _Scored] = field(default_factory=dict)
    scored: list[_Scored] = field(default_factory=list)
    best: CandidateScore | None = None
    soup: list[Evidence] = field(default_factory=list)
    last_diff: str = ""
    last_explanation: str = ""
    pending: dict[str, str] = field(default_factory=dict)
    """Patch key -> candidate id of candidates prepared but not yet executed (this batch)."""
    deferred: list[CandidateRecord] = field(default_factory=list)
    """Duplicates of pending candidates, scored once the original has run."""
    quality_rejected: set[str] = field(default_factory=set)
    clarified: bool = False
    accepted: _Scored | None = None
    reverted: _Scored | None = None
    quality_reason: str = ""
    stop: str = ""
    """Budget dimension (or ``rounds``) that ended the search."""
    proposer_dead: str = ""
    order: int = 0
    interrupted: str = ""
    """The :class:`~jobs.repair.ports.Interrupt`'s reason, once it asked the loop to stop."""
    checks: int = 0
    """How many times the interrupt was asked (a replay stops at the same check)."""
    baseline_failing: frozenset[str] = frozenset()
    """Every test the (fail-fast-free) baseline saw fail: proven failing before the change."""
    reference_s: float | None = None
    """Duration the later runs' timeout is derived from (None: nothing completed yet)."""
    verification: dict[str, Any] = field(default_factory=dict)
    pre_existing: tuple[str, ...] = ()
    """Set with a ``partial`` acceptance: the pre-existing failures the exact command still shows."""

    def spend(self) -> Spend:
        return Spend(
            iterations=self.iterations,
            tokens=self.usage.tokens,
            usd=self.usage.usd,
            wall_s=max(0.0, self.clock.monotonic() - self.started),
            executions=self.executions,
        )

    def remaining(self) -> Budget:
        return self.budget.remaining(self.spend())


# --- the controller ------------------------------------------------------------------------------


class RepairLoop:
    """The controller. Ports: ``retriever`` (None: no retrieval), ``proposer``, ``workbench``,
    ``clock``; ``llm`` (optional) serves the roles — planner, quality checkers, clarifier, test
    designer, explainer — and its presence is what makes LLM tiers available. ``interrupt``
    (optional) is asked before reproduction and before every round; a reason stops the loop with
    verdict ``interrupted`` and no patch."""

    def __init__(
        self,
        retriever: Retriever | None,
        proposer: Proposer,
        workbench: Workbench,
        clock: Clock,
        *,
        llm: LLM | None = None,
        config: LoopConfig | None = None,
        interrupt: Interrupt | None = None,
    ) -> None:
        self.retriever = retriever
        self.proposer = proposer
        self.workbench = workbench
        self.clock = clock
        self.llm = llm
        self.config = config or LoopConfig()
        self.interrupt = interrupt

    # -- entry point -----------------------------------------------------------------------------

    def run(self, task: RepairTask, budget: Budget, tier: TierRequest = "auto") -> RepairResult:
        """Reproduce, then repair within ``budget`` using the tiers ``tier`` resolves to.

        Raises :class:`jobs.repair.tiers.TierUnavailable` for an LLM tier without an LLM (a
        configuration error, before anything runs).
        """
        tier_plan = resolve_tiers(tier, has_llm=self.llm is not None)
        trace = Trace(
            task=task,
            tier_requested=tier,
            tier_configs=[t.to_json() for t in tier_plan.tiers],
            budget=budget,
            config=self.config.to_json(),
            model=self.llm.model if self.llm is not None else "",
            proposer=getattr(self.proposer, "name", type(self.proposer).__name__),
            notices=list(tier_plan.notices),
        )
        st = _State(task=task, budget=budget, clock=self.clock, started=self.clock.monotonic(), trace=trace)
        commands = getattr(self.workbench, "commands", None)
        if isinstance(commands, Mapping):
            trace.commands = dict(commands)
            if commands.get("note"):
                trace.notices.append(str(commands["note"]))
        guard = _GuardedLLM(self.llm, st) if self.llm is not None else None
        if self._interrupted(st, "before reproduction"):
            return self._finish(st, ("interrupted", st.interrupted))
        verdict = self._reproduce(st, guard)
        if verdict is None:
            for cfg in tier_plan.tiers:
                trace.tiers.append(cfg.name)
                self._run_tier(st, cfg, guard)
                if st.accepted is not None or st.reverted is not None or st.proposer_dead:
                    break
                if st.interrupted:
                    break
                if st.stop and st.stop != "rounds":
                    break
            return self._finish(st)
        return self._finish(st, verdict)

    # -- reproduce first -------------------------------------------------------------------------

    def _reproduce(self, st: _State, guard: _GuardedLLM | None) -> tuple[Verdict, str] | None:
        rep = st.trace.reproduction
        t0 = self.clock.monotonic()
        try:
            if not self._can_execute(st):
                st.stop = self._execution_stop(st)
                rep.verdict, rep.reason = "not_run", f"no budget for the reproduction run ({st.stop})"
                return "budget_exhausted", rep.reason
            baseline = self._run_tests(st, None, None)
            rep.baseline = baseline
            st.baseline = baseline
            st.baseline_failing = baseline.failing
            rep.timings["candidate_timeout_s"] = self._timeout(st)
            if baseline.environment:
                # Nothing of the code was tested: no triage, no candidates, no model call.
                rep.verdict, rep.reason = "environment", baseline.environment
                return "environment", baseline.environment
            task = st.task
            failing = (*baseline.failed, *baseline.errors)
            if task.targets:
                targets = tuple(t for t in task.targets if _fails(baseline, t))
                if not targets:
                    rep.verdict = "not_reproducible"
                    rep.reason = "the target tests pass on the base code"
                    return "not_reproducible", rep.reason
            else:
                targets = tuple(dict.fromkeys(failing))
                seen_in_ci = tuple(t for t in targets if _named_in(t, task.ci_tests))
                if seen_in_ci:
                    targets = seen_in_ci
            if not targets and task.kind == "issue":
                targets = self._design_test(st, guard)
                if not targets and guard is None:
                    rep.verdict = "not_reproducible"
                    rep.reason = (
                        "no failing test reproduces the issue, and without an LLM none can be written"
                    )
                    return "not_reproducible", rep.reason
            elif not targets:
                rep.verdict = "not_reproducible"
                rep.reason = f"the test command passes on the base code ({baseline.summary()})"
                return "not_reproducible", rep.reason
            flaky: tuple[str, ...] = ()
            if targets and not st.synthesized:
                targets, flaky = self._triage(st, targets)
                rep.flaky = list(flaky)
                if not targets:
                    rep.verdict = "flaky"
                    rep.reason = (
                        f"{len(flaky)} failing test{'s' if len(flaky) != 1 else ''} passed when re-run on the "
                        "unmodified code: flaky, not repaired"
                    )
                    return "flaky", rep.reason
            st.targets = targets
            st.baseline_passed = frozenset(baseline.passed) - set(flaky)
            st.baseline_errors = frozenset(baseline.errors)
            rep.targets = list(targets)
            rep.verdict = "reproduced"
            if targets:
                rep.reason = f"{len(targets)} target failure{'s' if len(targets) != 1 else ''} reproduced"
                if flaky:
                    rep.reason += f"; {len(flaky)} flaky left out"
                if baseline.timed_out:
                    rep.reason += "; the baseline run timed out (a hang), taken as reproduced without re-runs"
            else:
                rep.reason = (
                    "no failing test: candidates are judged by the regression suite and the quality checker"
                )
            failures = {f.test_id: f for f in baseline.failures}
            if not st.task.failures and not st.synthesized:
                st.task = replace(st.task, failures=tuple(failures[t] for t in targets if t in failures))
            if not st.tests_text:
                st.tests_text = self._tests_text(st)
            return None
        finally:
            rep.timings["total_s"] = self.clock.monotonic() - t0

    def _triage(self, st: _State, targets: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Re-run the targets on the base code; a target that passes in any re-run is flaky."""
        rep = st.trace.reproduction
        if st.baseline is not None and st.baseline.timed_out:
            # Re-running a hang costs the timeout again and tells little: it is taken as reproduced.
            rep.reason = "the baseline run timed out: the hang is taken as reproduced without re-runs"
            return targets, ()
        history: dict[str, list[bool]] = {t: [] for t in targets}
        runs = 0
        while runs < self.config.triage_runs and self._can_execute(st):
            if st.budget.would_exceed(st.spend(), Spend(executions=runs + 1)):
                break
            runs += 1
        if runs < self.config.triage_runs:
            rep.reason = "triage cut short by the budget"
        # The re-runs are independent: they run as one batch (concurrently when parallel > 1).
        for run in self._run_many(st, [(None, self._narrowing(targets))] * runs):
            rep.reruns.append(run)
            for t in targets:
                history[t].append(_fails(run, t))
        reproducible = tuple(t for t in targets if all(history[t]))
        flaky = tuple(t for t in targets if not all(history[t]))
        return reproducible, flaky

    def _design_test(self, st: _State, guard: _GuardedLLM | None) -> tuple[str, ...]:
        """Test Designer + Test Quality Checker: a reproduction test that fails on the base code."""
        if guard is None or not self.config.design_tests:
            return ()
        rep = st.trace.reproduction
        record: dict[str, Any] = {"verdict": "none"}
        rep.designed_test = record
        evidence = self._retrieve_for_design(st)
        framework = self.workbench.framework
        language = _LANGUAGE_OF_FRAMEWORK.get(framework, "python")
        try:
            designed = roles.design_test(
                guard, st.task, evidence, language=language, framework=framework or "pytest"
            )
        except LLMError as exc:
            record.update(error=str(exc))
            self._role_event(st, -1, "design_test", ok=False, error=str(exc))
            return ()
        self._role_event(st, -1, "design_test", ok=designed.ok, error=designed.error, usage=designed.usage)
        record.update(
            path=designed.path, content=designed.content, rationale=designed.rationale, error=designed.error
        )
        if not designed.ok:
            return ()
        try:
            verdict = roles.check_test(guard, st.task, designed.content)
        except LLMError as exc:
            record.update(verdict="unchecked", error=str(exc))
            self._role_event(st, -1, "check_test", ok=False, error=str(exc))
            return ()
        self._role_event(st, -1, "check_test", ok=verdict.accept, error=verdict.error, usage=verdict.usage)
        record.update(checks=list(verdict.checks), reasoning=verdict.reasoning)
        if not verdict.accept:
            record["verdict"] = "rejected by the test quality checker"
            return ()
        edit = Edit(path=designed.path, kind="create", new=designed.content)
        try:
            change = self.workbench.preview((edit,))
        except EditError as exc:
            record.update(verdict="does not apply", error=str(exc))
            return ()
        if not self._can_execute(st):
            record["verdict"] = "not run (budget)"
            return ()
        run = self._run_tests(st, change, None)
        record["run"] = run.to_json()
        ids = [
            t for t in (*run.failed, *run.errors) if t == designed.path or t.startswith(designed.path + "::")
        ]
        by_id = {f.test_id: f for f in run.failures}
        behavioural = [
            t for t in ids if by_id.get(t, Failure(t)).type not in _BROKEN_TEST_TYPES and t in run.failed
        ]
        record["failing"] = ids
        if not behavioural:
            record["verdict"] = "rejected: it does not fail on the base code for a behavioural reason"
            record["reproduced"] = False
            return ()
        record["verdict"] = "accepted"
        record["reproduced"] = True
        st.synthesized = True
        st.extra_edits = (edit,)
        st.tests_text = designed.content
        st.task = replace(st.task, failures=tuple(by_id[t] for t in behavioural if t in by_id))
        return tuple(behavioural)

    def _retrieve_for_design(self, st: _State) -> list[Evidence]:
        if self.retriever is None:
            return []
        spec = QuerySpec("question", " ".join(st.task.spec_text().split())[:1000])
        found, record = self._search(st, [spec], k=5, hints=())
        st.trace.reproduction.retrieval = record
        return found

    # -- tiers and rounds ------------------------------------------------------------------------

    def _run_tier(self, st: _State, cfg: TierConfig, guard: _GuardedLLM | None) -> None:
        st.stop = ""
        rounds = cfg.rounds_within(max(0, st.budget.iterations - st.iterations))
        if rounds <= 0:
            st.stop = "iterations"
            return
        plan: PlanOutcome | None = None
        for _ in range(rounds):
            if self._interrupted(st, f"before round {len(st.trace.rounds) + 1}"):
                return
            stop = self._round_stop(st, cfg)
            if stop:
                st.stop = stop
                return
            record, plan, new = self._round(st, cfg, guard, plan)
            self._after_round(st, cfg, guard, record)
            if st.accepted is not None or st.reverted is not None or st.proposer_dead:
                return
            if not new and not cfg.llm:
                st.stop = "candidates"  # templates have nothing left to try
                return
            if st.stop:
                return
        st.stop = "rounds"

    def _interrupted(self, st: _State, where: str) -> bool:
        """Ask the interrupt (when there is one); on a reason record it and answer True."""
        if self.interrupt is None or st.interrupted:
            return bool(st.interrupted)
        st.checks += 1
        try:
            reason = self.interrupt.check()
        except Exception as exc:  # errors are data: a failed check is not a reason to stop
            st.trace.notices.append(f"interrupt check {st.checks} failed: {type(exc).__name__}: {exc}")
            return False
        if not reason:
            return False
        st.interrupted = " ".join(str(reason).split()) or "interrupted"
        st.trace.interrupt = {"check": st.checks, "where": where, "reason": st.interrupted}
        st.trace.notices.append(f"interrupted {where}: {st.interrupted}")
        return True

    def _round_stop(self, st: _State, cfg: TierConfig) -> str:
        """The budget dimension that forbids another round, or ''."""
        spend = st.spend()
        if st.budget.would_exceed(spend, Spend(iterations=1)):
            return "iterations"
        if cfg.llm:
            for dim in ("tokens", "usd"):
                if getattr(spend, dim) >= getattr(st.budget, dim):
                    return dim
        if not self._can_execute(st):
            return self._execution_stop(st)
        return ""

    def _round(
        self,
        st: _State,
        cfg: TierConfig,
        guard: _GuardedLLM | None,
        previous: PlanOutcome | None,
        *,
        phase: str = "repair",
    ) -> tuple[RoundRecord, PlanOutcome, int]:
        t0 = self.clock.monotonic()
        record = RoundRecord(index=len(st.trace.rounds), tier=cfg.name, phase=phase)
        st.trace.rounds.append(record)
        st.iterations += 1
        usage_before = st.usage
        task = st.task
        source = self.workbench.source()
        latest = st.history[-1] if st.history else None
        hints = failure_hints([*(latest.failures if latest else ()), *task.failures], task.hints)
        pinned = frame_context(source, hints, max_items=self.config.max_frame_context) if cfg.llm else []

        # plan
        t = self.clock.monotonic()
        plan = make_plan(
            task,
            enabled=cfg.plan,
            max_subgoals=cfg.max_subgoals,
            llm=guard if cfg.llm else None,
            evidence=pinned,
            feedback=st.history,
            previous=previous,
        )
        record.plan = plan.to_json()
        if plan.source == "llm" and previous is None:
            self._role_event(st, record.index, "plan", ok=True, usage=plan.usage)
        elif plan.error:
            self._role_event(st, record.index, "plan", ok=False, error=plan.error, usage=plan.usage)
        record.timings["plan_s"] = self.clock.monotonic() - t

        # retrieve (plan-conditioned, refreshed from feedback) + knowledge soup
        t = self.clock.monotonic()
        retrieved: list[Evidence] = []
        if cfg.k > 0 and self.retriever is not None:
            specs = formulate_queries(
                task.spec_text(),
                plan=plan.subgoals,
                feedback=latest,
                candidate_diff=st.last_diff,
                explanation=st.last_explanation,
            )
            retrieved, record.retrieval = self._search(st, specs, k=cfg.k, hints=hints)
        soup = st.soup[-self.config.soup_size :] if cfg.k > 0 else []
        union = filter_redundancy([*pinned, *retrieved, *soup])
        evidence, dropped = fit_evidence(
            union, budget_chars=self.config.evidence_chars, pinned=[e.id for e in pinned]
        )
        if dropped:
            record.retrieval.setdefault("dropped", list(dropped))
        record.evidence = [evidence_to_json(e) for e in evidence]
        record.timings["retrieve_s"] = self.clock.monotonic() - t

        # compose
        history, _ = fit_history(st.history, budget_chars=self.config.history_chars)
        record.feedback_rounds = len(history)
        request = ProposalRequest(
            task=task,
            source=source,
            round=record.index,
            evidence=tuple(evidence),
            plan=plan.subgoals,
            feedback=history,
            n=cfg.candidates,
            tried=frozenset(st.tried),
        )
        t = self.clock.monotonic()
        record.prompt = pack_context(
            task,
            evidence=evidence,
            plan=plan.subgoals,
            feedback=history,
            budget_chars=self.config.prompt_chars,
        ).text
        record.timings["compose_s"] = self.clock.monotonic() - t

        # propose
        t = self.clock.monotonic()
        proposals = self._propose(st, record, request, cfg)
        record.timings["propose_s"] = self.clock.monotonic() - t

        # execute every candidate (or up to the first submittable one for tier 0), target runs of
        # up to `parallel` candidates at a time
        feedbacks: list[tuple[int, int, Feedback]] = []
        new = self._execute_proposals(st, record, proposals, cfg, feedbacks)
        if (
            not cfg.llm
            and self.config.pairs > 0
            and not st.stop
            and not any(c.submittable for c in record.candidates)
        ):
            # Tier 0 keeps searching: candidates that each fixed different targets, combined.
            pairs = self._pairs(st)
            if pairs:
                record.events.append(
                    f"{len(pairs)} pair{'s' if len(pairs) != 1 else ''} of partial candidates combined"
                )
                new += self._execute_proposals(st, record, pairs, cfg, feedbacks)
        merged = merge_round(record.index, [fb for _, _, fb in sorted(feedbacks, key=lambda x: (x[0], x[1]))])
        if merged is not None:
            st.history.append(merged)
            record.feedback = merged
        usage = _usage_delta(st.usage, usage_before)
        record.usage = usage
        record.best_tests_passed = st.best.tests_passed if st.best is not None else None
        record.best_candidate = self._id_of(st, st.best)
        record.spend_after = st.spend()
        total = self.clock.monotonic() - t0
        execute = sum(c.timings.get("execute_s", 0.0) for c in record.candidates)
        record.timings["execute_s"] = execute
        record.timings["total_s"] = total
        llm_wait = record.timings["propose_s"] if cfg.llm else 0.0
        if plan.source == "llm" and previous is None:
            llm_wait += record.timings["plan_s"]
        record.timings["overhead_s"] = max(0.0, total - execute - llm_wait)
        return record, plan, new

    def _execute_proposals(
        self,
        st: _State,
        record: RoundRecord,
        proposals: Sequence[Proposal],
        cfg: TierConfig,
        feedbacks: list[tuple[int, int, Feedback]],
    ) -> int:
        """Prepare, gate and run ``proposals`` as this round's next candidates; how many were new."""
        new = 0
        batch: list[_Pending] = []
        halted = False
        offset = len(record.candidates)
        for i, proposal in enumerate(proposals):
            cand, fb, fresh, applied = self._prepare(st, record, offset + i, proposal)
            record.candidates.append(cand)
            new += fresh
            if fb is not None:
                feedbacks.append((-cand.tests_passed, offset + i, fb))
            if applied is not None:
                batch.append(_Pending(cand, applied, order=offset + i))
            last = i + 1 == len(proposals)
            if batch and (len(batch) >= self.config.parallel or last):
                self._first_runs(st, batch)
                for pending in batch:
                    fb = self._complete(st, record, pending, halted=halted)
                    feedbacks.append((-pending.cand.tests_passed, pending.order, fb))
                    if pending.cand.submittable and not cfg.exhaust_round:
                        halted = True
                batch = []
            if halted:
                break
            if not last and not self._can_execute(st):
                if batch:  # they cannot run: recorded as stopped by the budget
                    self._first_runs(st, batch)
                    for pending in batch:
                        feedbacks.append(
                            (0, pending.order, self._complete(st, record, pending, halted=halted))
                        )
                record.events.append(
                    f"{len(proposals) - i - 1} candidates not run: {self._execution_stop(st)}"
                )
                st.stop = self._execution_stop(st)
                break
        return new

    def _pairs(self, st: _State) -> list[Proposal]:
        """Up to ``config.pairs`` proposals, each the edits of two executed candidates that fixed
        different targets and broke nothing that was not failing before (never tried yet)."""
        if len(set(st.targets)) < 2:
            return []
        partial: list[tuple[_Scored, frozenset[str]]] = []
        for s in st.scored:
            rec = s.record
            if rec.duplicate_of or s.outcome is None or rec.proposer == "pair" or s.outcome.timed_out:
                continue
            fixed = self._fixed_targets(st, s.outcome)
            if fixed and not self._new_failures(st, s.outcome):
                partial.append((s, fixed))
        partial.sort(key=lambda item: (-len(item[1]), item[0].score.diff_lines, item[0].score.order))
        out: list[Proposal] = []
        extra = len(st.extra_edits)
        for i, (a, fa) in enumerate(partial):
            for b, fb in partial[i + 1 :]:
                if fa <= fb or fb <= fa:
                    continue
                edits = (*a.record.edits[extra:], *b.record.edits[extra:])
                proposal = Proposal(
                    edits=tuple(edits),
                    explanation=f"{a.record.id} + {b.record.id}: {a.record.explanation} / {b.record.explanation}",
                    proposer="pair",
                    variant="pair",
                )
                if proposal_key(proposal) in st.tried:
                    continue
                out.append(proposal)
                if len(out) >= self.config.pairs:
                    return out
        return out

    def _fixed_targets(self, st: _State, outcome: TestOutcome) -> frozenset[str]:
        """The targets that pass in ``outcome``."""
        return frozenset(t for t in st.targets if self._targets_gate_for(st, outcome, (t,)).passed)

    def _targets_gate_for(self, st: _State, outcome: TestOutcome, targets: Sequence[str]) -> GateResult:
        passed = list(outcome.passed)
        # A run-level error target ("<run>", a collection error) is fixed when it is gone and the run
        # either reported tests or, for a command whose output names no tests, exited 0.
        if not outcome.timed_out and (outcome.ran or (outcome.exit_code == 0 and not outcome.errors)):
            passed.extend(t for t in targets if t in st.baseline_errors and t not in outcome.errors)
        return targets_gate(targets, passed, (*outcome.failed, *outcome.errors))

    @staticmethod
    def _new_failures(st: _State, outcome: TestOutcome) -> list[str]:
        """Ids failing in ``outcome`` that the baseline did not see fail."""
        return sorted(t for t in outcome.failing if not _proven_failing(t, st.baseline_failing))

    def _propose(
        self, st: _State, record: RoundRecord, request: ProposalRequest, cfg: TierConfig
    ) -> list[Proposal]:
        remaining = st.remaining()
        if cfg.llm:
            safety = self.config.llm_safety
            remaining = remaining.with_(tokens=int(remaining.tokens * safety), usd=remaining.usd * safety)
        try:
            proposals = list(self.proposer.propose(request, remaining))
        except (ReplayDivergence, ReplayMismatch):
            raise
        except Exception as exc:  # errors are data: the round goes on without candidates
            record.proposer_errors.append(f"{type(exc).__name__}: {exc}")
            proposals = []
        for err in getattr(self.proposer, "last_errors", None) or []:
            record.proposer_errors.append(str(err))
            if isinstance(err, LLMError) and err.kind in _FATAL_LLM_ERRORS:
                st.proposer_dead = str(err)
        stop = getattr(self.proposer, "last_budget_stop", None)
        if stop:
            # The proposer cannot afford another call: this round is the last one.
            record.events.append(f"proposer stopped by the budget ({stop})")
            st.stop = str(stop)
        for p in proposals:
            st.usage = st.usage + p.usage
        if not proposals and not record.proposer_errors:
            record.events.append("the proposer returned no candidates")
        return proposals

    # -- one candidate ---------------------------------------------------------------------------

    def _prepare(
        self, st: _State, record: RoundRecord, index: int, proposal: Proposal
    ) -> tuple[CandidateRecord, Feedback | None, int, AppliedEdits | None]:
        """Apply and statically gate one proposal. Returns its record, its feedback (when it ends
        here), 1 if it was new, and the change when it is ready to execute."""
        cand = CandidateRecord(
            id=f"r{record.index + 1}c{index + 1}",
            round=record.index,
            proposer=proposal.proposer,
            variant=proposal.variant,
            explanation=proposal.explanation,
            proposal_key=proposal_key(proposal),
            edits=[*st.extra_edits, *proposal.edits],
            usage=proposal.usage,
        )
        key = cand.proposal_key
        if not proposal.edits:
            cand.error = proposal.explanation or "the proposal has no edits"
            return cand, encode(record.index, None, edit_errors=[cand.error]), 0, None
        if key in st.by_proposal:
            cand.duplicate_of = st.by_proposal[key]
            return cand, None, 0, None
        st.tried.add(key)
        st.by_proposal[key] = cand.id
        t = self.clock.monotonic()
        try:
            applied: AppliedEdits | EditError = self.workbench.preview(cand.edits)
        except EditError as exc:
            applied = exc
        except Exception as exc:  # workbench trouble is data too
            cand.error = f"could not apply: {type(exc).__name__}: {exc}"
            cand.timings["preview_s"] = self.clock.monotonic() - t
            return cand, encode(record.index, None, edit_errors=[cand.error]), 1, None
        cand.timings["preview_s"] = self.clock.monotonic() - t
        applies = applies_gate(applied)
        cand.gates.append(applies)
        if isinstance(applied, EditError) or not applies.passed:
            return cand, encode(record.index, None, edit_errors=[applies.detail]), 1, None
        diff = applied.diff()
        cand.diff = diff
        cand.patch_key = patch_key(diff)
        if cand.patch_key in st.by_patch or cand.patch_key in st.pending:
            # Same normalized patch: not executed again, but it votes for the earlier candidate.
            cand.gates = []
            if cand.patch_key in st.by_patch:
                earlier = st.by_patch[cand.patch_key]
                cand.duplicate_of = earlier.record.id
                self._score(st, cand, earlier.outcome, earlier.score.tests_passed, False)
            else:
                cand.duplicate_of = st.pending[cand.patch_key]
                st.deferred.append(cand)
            return cand, None, 0, None

        t = self.clock.monotonic()
        stats = diff_stats(diff)
        static = [
            syntax_gate(applied),
            policy_gate(
                applied,
                about_tests=st.task.about_tests,
                denied=self.config.gates.denied,
                allowed=self.config.gates.allowed,
            ),
            size_gate(stats, max_files=self.config.gates.max_files, max_lines=self.config.gates.max_lines),
        ]
        cand.gates.extend(static)
        cand.timings["gates_s"] = self.clock.monotonic() - t
        rejected = [g for g in static if not g.passed]
        if rejected:
            scored = self._score(st, cand, None, 0, False)
            st.by_patch[cand.patch_key] = scored
            return cand, encode(record.index, None, gate_failures=[_gate_line(g) for g in rejected]), 1, None
        st.pending[cand.patch_key] = cand.id
        return cand, None, 1, applied

    def _first_runs(self, st: _State, batch: Sequence[_Pending]) -> None:
        """The target runs of a batch of candidates, concurrently when ``parallel`` > 1.

        How many run is decided up front from the budget (deterministic); the rest are marked
        as stopped by the budget.
        """
        allowed = 0
        for _ in batch:
            if not self._can_execute(st) or st.budget.would_exceed(st.spend(), Spend(executions=allowed + 1)):
                break
            allowed += 1
        select = self._narrowing(st.targets) if st.targets else self.config.regression_select
        jobs = [(p.applied, select) for p in batch[:allowed]]
        t = self.clock.monotonic()
        outcomes = self._run_many(st, jobs)
        elapsed = self.clock.monotonic() - t
        for pending, first in zip(batch, outcomes, strict=False):
            pending.first = first
            pending.cand.timings["execute_s"] = elapsed / max(1, len(jobs))
        for pending in batch[allowed:]:
            pending.stopped = f"budget: {self._execution_stop(st) or 'executions'}"

    def _complete(self, st: _State, record: RoundRecord, pending: _Pending, *, halted: bool) -> Feedback:
        """Targets gate, regression run, score, feedback of one candidate whose target run is done."""
        cand, applied = pending.cand, pending.applied
        t = self.clock.monotonic()
        run, gates = self._execute(st, applied, pending.first, stopped=pending.stopped, halted=halted)
        cand.timings["execute_s"] = cand.timings.get("execute_s", 0.0) + (self.clock.monotonic() - t)
        cand.run = run
        cand.gates.extend(gates)
        st.pending.pop(cand.patch_key, None)
        outcome = run.full or run.targets
        tests_passed = self._tests_passed(st, run)
        submittable = run.full is not None and all(g.passed for g in cand.gates) and not run.stopped
        scored = self._score(st, cand, outcome, tests_passed, submittable)
        st.by_patch[cand.patch_key] = scored
        for dupe in [d for d in st.deferred if d.duplicate_of == cand.id]:
            st.deferred.remove(dupe)
            self._score(st, dupe, outcome, tests_passed, False)
        if outcome is not None and tests_passed > 0:
            st.last_diff, st.last_explanation = cand.diff, cand.explanation
            if st.best is scored.score:
                st.soup.append(
                    verified_snippet(cand.id, cand.diff, tests_passed=tests_passed, round_index=record.index)
                )
        elif outcome is not None and not st.last_diff:
            st.last_diff, st.last_explanation = cand.diff, cand.explanation
        # Failing targets show up as failures; other gate rejections (regressions) are named.
        failed_gates = [_gate_line(g) for g in gates if not g.passed and g.gate != "targets"]
        fb = encode(
            record.index,
            outcome,
            targets=st.targets,
            baseline_passed=st.baseline_passed,
            baseline_errors=st.baseline_errors,
            gate_failures=failed_gates,
        )
        if run.stopped:
            fb = replace(fb, summary=f"{fb.summary}; {run.stopped}")
        return fb

    def _execute(
        self,
        st: _State,
        applied: AppliedEdits,
        first: TestOutcome | None,
        *,
        stopped: str = "",
        halted: bool = False,
    ) -> tuple[CandidateRun, list[GateResult]]:
        """After the targets run ``first``: the targets gate and, when they pass, the regression
        suite (unless the targets run already was the whole suite)."""
        gates: list[GateResult] = []
        if first is None:
            return CandidateRun(stopped=stopped or f"budget: {self._execution_stop(st)}"), gates
        select = self._narrowing(st.targets) if st.targets else self.config.regression_select
        executions = 1
        tgate = self._targets_gate(st, first)
        if not tgate.passed:
            gates.append(tgate)
            return CandidateRun(targets=first, executions=executions), gates
        full: TestOutcome | None
        narrowed = first.selected and tuple(select or ()) != tuple(self.config.regression_select or ())
        if halted and narrowed:
            gates.append(tgate)
            return CandidateRun(
                targets=first, executions=executions, stopped="halted: an earlier candidate passed every gate"
            ), gates
        if not narrowed:
            full = first
        elif not self._can_execute(st):
            gates.append(tgate)
            return CandidateRun(
                targets=first, executions=executions, stopped=f"budget: {self._execution_stop(st)}"
            ), gates
        else:
            full = self._run_many(st, [(applied, self.config.regression_select)])[0]
            executions += 1
            tgate = (
                self._targets_gate(st, full) if not full.selected or _covers_all(full, st.targets) else tgate
            )
        gates.append(tgate)
        gates.append(self._regression_gate(st, full))
        return CandidateRun(targets=first, full=full, executions=executions), gates

    def _regression_gate(self, st: _State, full: TestOutcome) -> GateResult:
        """No test fails now that was not proven failing before; none that passed stopped running."""
        baseline = st.baseline_passed - set(st.targets)
        if self.config.regression_select is not None:
            baseline = frozenset(t for t in baseline if _selected_by(t, self.config.regression_select))
        return regression_gate(
            baseline, (*full.failed, *full.errors), full.ran, failing_before=st.baseline_failing
        )

    @staticmethod
    def _narrowing(targets: Sequence[str]) -> tuple[str, ...] | None:
        """The ids to narrow a run to: the targets, or None (the whole suite) when one of them is a
        run-level error (``<run>``: a timeout, a crash), which names no test to select."""
        if any(t.startswith(RUN_ERROR_PREFIX) for t in targets):
            return None
        return tuple(targets)

    def _targets_gate(self, st: _State, outcome: TestOutcome) -> GateResult:
        return self._targets_gate_for(st, outcome, st.targets)

    def _tests_passed(self, st: _State, run: CandidateRun) -> int:
        """Score: targets passing plus previously passing tests still passing (when the suite ran)."""
        outcome = run.full or run.targets
        if outcome is None:
            return 0
        gate = self._targets_gate(st, outcome)
        n_targets = len(set(st.targets))
        if gate.passed:
            ok_targets = n_targets
        else:
            data = gate.data
            bad = len(list(_seq(data.get("failed")))) + len(list(_seq(data.get("not_run"))))
            ok_targets = max(0, n_targets - bad)
        if run.full is None:
            return ok_targets
        others = st.baseline_passed - set(st.targets)
        if self.config.regression_select is not None:
            others = frozenset(t for t in others if _selected_by(t, self.config.regression_select))
        still = others & set(run.full.passed)
        return ok_targets + len(still)

    def _score(
        self,
        st: _State,
        cand: CandidateRecord,
        outcome: TestOutcome | None,
        tests_passed: int,
        submittable: bool,
    ) -> _Scored:
        cand.tests_passed = tests_passed
        cand.submittable = submittable and cand.id not in st.quality_rejected
        lines = normalized_size(cand.diff) if cand.diff else 0
        score = CandidateScore(
            key=cand.patch_key or cand.proposal_key,
            submittable=cand.submittable,
            tests_passed=tests_passed,
            diff_lines=lines,
            order=st.order,
        )
        st.order += 1
        scored = _Scored(cand, score, outcome)
        st.scored.append(scored)
        if not cand.duplicate_of:
            st.best = best_so_far(st.best, score)
        return scored

    # -- selection, quality check, clarifier, revert ---------------------------------------------

    def _needs_quality_check(self, st: _State) -> bool:
        if self.llm is None or self.config.quality_check == "never":
            return False
        if self.config.quality_check == "always":
            return True
        return st.task.kind == "issue" and (st.synthesized or not st.targets)

    def _select(self, st: _State) -> _Scored | None:
        """The best submittable candidate so far (tests passed, smallest normalized diff, votes)."""
        pool = [
            s
            for s in st.scored
            if s.record.submittable and s.record.id not in st.quality_rejected and not s.record.duplicate_of
        ]
        if not pool:
            return None
        in_pool = {id(s.score) for s in pool}
        # Votes count every candidate that produced the same normalized patch, submittable or not.
        scores = [
            s.score if id(s.score) in in_pool else replace(s.score, submittable=False) for s in st.scored
        ]
        best = select_best(scores)
        if best is None:
            return None
        return next(s for s in pool if s.score.key == best.key)

    def _after_round(
        self, st: _State, cfg: TierConfig, guard: _GuardedLLM | None, record: RoundRecord
    ) -> None:
        chosen = self._select(st)
        if chosen is None:
            return
        if guard is None or not self._needs_quality_check(st):
            # The final verification decides; a candidate it rejects leaves the pool.
            while chosen is not None and not self._accept(st, chosen):
                chosen = self._select(st)
            return
        if self._quality(st, guard, chosen, record):
            self._accept(st, chosen)
            return
        first_verified = chosen
        if st.clarified:
            st.reverted = first_verified
            return
        st.clarified = True
        attempts = [s.record.explanation for s in st.scored if s.record.explanation][-4:]
        try:
            clarification = roles.clarify(guard, st.task, st.history, attempts=attempts)
        except LLMError as exc:
            self._role_event(st, record.index, "clarify", ok=False, error=str(exc))
            st.reverted = first_verified
            st.quality_reason = f"the clarifier failed ({exc})"
            return
        self._role_event(
            st,
            record.index,
            "clarify",
            ok=clarification.ok,
            error=clarification.error,
            usage=clarification.usage,
        )
        if not clarification.ok or self._round_stop(st, cfg):
            st.reverted = first_verified
            if not clarification.ok:
                st.quality_reason = f"the clarifier gave no usable restatement ({clarification.error})"
            else:
                st.quality_reason = "no budget left to regenerate after clarification"
            return
        if self._interrupted(st, f"before round {len(st.trace.rounds) + 1} (regeneration)"):
            return  # nothing accepted: the verdict is `interrupted`, with no patch
        original = st.task
        st.task = replace(
            original,
            body=f"{original.body}\n\nClarified requirements (restated after a rejected attempt):\n{clarification.text}".strip(),
        )
        regen, _, _ = self._round(st, cfg, guard, None, phase="clarified")
        st.task = original
        again = self._select(st)
        if again is not None and again is not chosen and self._quality(st, guard, again, regen):
            if not self._accept(st, again):
                st.reverted = first_verified
            return
        st.reverted = first_verified

    def _accept(self, st: _State, chosen: _Scored) -> bool:
        """The final verification of a selected candidate: the exact command on the patched tree,
        in a fresh copy. Exit 0 -> accepted (``fixed``). Failing only on tests the baseline saw
        fail -> accepted as ``partial``. Anything else -> the candidate gets a failed
        ``verification`` gate, leaves the pool, and the search goes on."""
        rec = chosen.record
        verified = self._verify(st, rec)
        if verified is None:
            return False
        outcome, data = verified
        command = str(data["command"])
        if data["passed_verification"]:
            rec.gates.append(
                GateResult("verification", True, f"`{command}` exited 0 on the patched tree", data)
            )
            st.accepted, st.verification = chosen, data
            return True
        pre, new = list(data["pre_existing"]), list(data["new_failures"])
        if pre and not new and not outcome.timed_out and not outcome.environment:
            detail = (
                f"`{command}` still fails (exit {outcome.exit_code}), only on tests that failed before the "
                f"change: {', '.join(pre[:5])}" + (" ..." if len(pre) > 5 else "")
            )
            rec.gates.append(GateResult("verification", False, detail, data))
            st.accepted, st.verification, st.pre_existing = chosen, data, tuple(pre)
            return True
        if new:
            why = f"fails on {', '.join(new[:5])}" + (" ..." if len(new) > 5 else "")
        elif outcome.timed_out:
            why = "timed out"
        else:
            why = f"exited {outcome.exit_code}" + (
                f": {outcome.failures[0].message.splitlines()[0]}"
                if outcome.failures and outcome.failures[0].message
                else ""
            )
        rec.gates.append(GateResult("verification", False, f"`{command}` {why} on the patched tree", data))
        rec.submittable = False
        st.quality_rejected.add(rec.id)
        return False

    def _verify(self, st: _State, rec: CandidateRecord) -> tuple[TestOutcome, dict[str, Any]] | None:
        """Run the exact command on ``rec``'s patch; the outcome and its trace record."""
        try:
            applied = self.workbench.preview(rec.edits)
        except Exception as exc:  # it applied when it was executed; trouble now is data
            rec.gates.append(GateResult("verification", False, f"could not re-apply the patch: {exc}"))
            rec.submittable = False
            st.quality_rejected.add(rec.id)
            return None
        timeout = self._timeout(st)
        verify = getattr(self.workbench, "verify", None)
        t0 = self.clock.monotonic()
        try:
            if callable(verify):
                outcome = verify(applied, timeout_s=timeout)
            else:
                outcome = self.workbench.run_tests(applied, select=None, timeout_s=timeout)
        except Exception as exc:  # a crash of the run is a failed verification, not of the loop
            outcome = TestOutcome(
                errors=("<run>",),
                failures=(Failure("<run>", type=type(exc).__name__, message=str(exc)),),
                exit_code=-1,
            )
        elapsed = self.clock.monotonic() - t0
        failing = sorted(outcome.failing)
        pre = [
            t
            for t in failing
            if _proven_failing(t, st.baseline_failing) and not t.startswith(RUN_ERROR_PREFIX)
        ]
        new = [t for t in failing if t not in pre]
        passed = outcome.exit_code == 0 and not outcome.timed_out
        data: dict[str, Any] = {
            "candidate": rec.id,
            "command": outcome.command or str(st.trace.commands.get("verification", "")),
            "exit_code": outcome.exit_code,
            "duration_s": round(outcome.duration_s or elapsed, 3),
            "timeout_s": round(timeout, 3),
            "passed": len(outcome.passed),
            "failed": len(outcome.failed),
            "errors": len(outcome.errors),
            "timed_out": outcome.timed_out,
            "passed_verification": passed,
            "pre_existing": [] if passed else pre,
            "new_failures": [] if passed else new,
        }
        st.trace.verifications.append(data)
        return outcome, data

    def _salvage(self, st: _State) -> _Scored | None:
        """No candidate passed every gate: the best one that fixed some targets and broke nothing,
        accepted as ``partial`` when its full run and the final verification fail only on tests
        that failed before the change."""
        if not st.targets:
            return None
        static = ("applies", "syntax", "policy", "size", "regressions", "verification", "quality")
        pool: list[tuple[int, _Scored]] = []
        for s in st.scored:
            rec = s.record
            if rec.duplicate_of or s.outcome is None or s.outcome.timed_out:
                continue
            if any(not g.passed for g in rec.gates if g.gate in static):
                continue
            fixed = self._fixed_targets(st, s.outcome)
            if fixed and not self._new_failures(st, s.outcome):
                pool.append((len(fixed), s))
        pool.sort(
            key=lambda item: (
                -item[0],
                -item[1].score.tests_passed,
                item[1].score.diff_lines,
                item[1].score.order,
            )
        )
        for _, s in pool[:2]:
            full = s.outcome if s.outcome is not None and not s.outcome.selected else None
            if full is None:
                if not self._can_execute(st):
                    return None
                try:
                    applied = self.workbench.preview(s.record.edits)
                except Exception:  # it applied before; trouble now means no salvage
                    continue
                full = self._run_many(st, [(applied, self.config.regression_select)])[0]
            if not self._regression_gate(st, full).passed or not self._fixed_targets(st, full):
                continue
            verified = self._verify(st, s.record)
            if verified is None:
                continue
            outcome, data = verified
            pre, new = list(data["pre_existing"]), list(data["new_failures"])
            if data["passed_verification"] or not pre or new or outcome.timed_out:
                continue
            s.outcome = full
            st.verification, st.pre_existing = data, tuple(pre)
            return s
        return None

    def _quality(self, st: _State, guard: _GuardedLLM, chosen: _Scored, record: RoundRecord) -> bool:
        """Code Quality Checker (imagined execution); its result becomes the ``quality`` gate."""
        try:
            verdict = roles.check_quality(guard, st.task, chosen.record.diff, st.tests_text)
        except LLMError as exc:
            gate = GateResult("quality", False, f"the quality checker could not run: {exc}")
            self._role_event(st, record.index, "check_quality", ok=False, error=str(exc))
        else:
            detail = "accepted by imagined execution" if verdict.accept else f"rejected: {verdict.reasoning}"
            gate = GateResult("quality", verdict.accept, detail.strip(), {"checks": list(verdict.checks)})
            self._role_event(
                st,
                record.index,
                "check_quality",
                ok=verdict.accept,
                error=verdict.error,
                usage=verdict.usage,
                detail=chosen.record.id,
            )
        chosen.record.gates.append(gate)
        if not gate.passed:
            st.quality_rejected.add(chosen.record.id)
            chosen.record.submittable = False
            st.quality_reason = gate.detail
        return gate.passed

    # -- finishing -------------------------------------------------------------------------------

    def _finish(self, st: _State, early: tuple[Verdict, str] | None = None) -> RepairResult:
        trace = st.trace
        verdict: Verdict
        out = trace.outcome
        returned: _Scored | None = None
        if early is not None:
            verdict, reason = early
        elif st.accepted is not None and st.pre_existing:
            verdict, returned = "partial", st.accepted
            reason = self._partial_reason(st, returned, len(set(st.targets)))
        elif st.accepted is not None:
            verdict, returned = "fixed", st.accepted
            command = st.verification.get("command", "the test command")
            reason = (
                f"{returned.record.id} passed every gate ({returned.record.tests_passed} tests pass) "
                f"and `{command}` exited 0 on the patched tree"
            )
        elif st.reverted is not None:
            verdict, returned = "reverted", st.reverted
            reason = (
                f"the code quality checker rejected the candidates ({st.quality_reason or 'rejected'}); "
                f"reverted to the best verified candidate {returned.record.id}, which needs human review"
            )
        elif st.proposer_dead:
            verdict, reason = "proposer_failed", f"the proposer cannot continue: {st.proposer_dead}"
        elif st.interrupted:
            verdict, reason = "interrupted", st.interrupted
        else:
            verdict, reason = self._unfixed(st)
            salvaged = self._salvage(st) if verdict != "reverted" else None
            if salvaged is not None:
                verdict, returned = "partial", salvaged
                fixed = len(self._fixed_targets(st, salvaged.outcome)) if salvaged.outcome is not None else 0
                reason = self._partial_reason(st, salvaged, fixed)
        out.verdict, out.reason = verdict, reason
        out.verification = dict(st.verification) if returned is not None else {}
        out.pre_existing = list(st.pre_existing) if verdict == "partial" else []
        if returned is not None:
            rec = returned.record
            out.candidate = rec.id
            out.patch = rec.diff
            out.patch_key = rec.patch_key
            out.explanation = rec.explanation
            out.edits = list(rec.edits)
            out.gates = list(rec.gates)
            out.tests_after = returned.outcome
            out.fixed = verdict == "fixed"
        trace.spend = st.spend()
        trace.usage = st.usage
        trace.timings["total_s"] = trace.spend.wall_s
        candidates = len([c for c in trace.candidates if not c.duplicate_of])
        return RepairResult(
            verdict=verdict,
            reason=reason,
            fixed=out.fixed,
            patch=out.patch,
            edits=tuple(out.edits),
            explanation=out.explanation,
            tiers=tuple(trace.tiers),
            rounds=len(trace.rounds),
            candidates=candidates,
            tests_before=trace.reproduction.baseline,
            tests_after=out.tests_after,
            gates=tuple(out.gates),
            usage=st.usage,
            spend=trace.spend,
            budget=st.budget,
            notices=tuple(trace.notices),
            trace=trace,
            stopped_by="" if returned is not None else st.stop,
            verification=dict(out.verification),
            pre_existing=tuple(out.pre_existing),
        )

    def _partial_reason(self, st: _State, returned: _Scored, fixed: int) -> str:
        n = len(set(st.targets))
        pre = list(st.pre_existing)
        command = st.verification.get("command", "the test command")
        listed = ", ".join(pre[:5]) + (f" and {len(pre) - 5} more" if len(pre) > 5 else "")
        head = (
            f"{returned.record.id} makes the {n} target test{'s' if n != 1 else ''} pass"
            if fixed >= n
            else f"{returned.record.id} fixes {fixed} of {n} target tests"
        )
        return (
            f"{head}, but `{command}` still fails (exit {st.verification.get('exit_code', '?')}), only on "
            f"{len(pre)} test{'s' if len(pre) != 1 else ''} that already failed before the change: {listed}"
        )

    def _unfixed(self, st: _State) -> tuple[Verdict, str]:
        executed = [s for s in st.scored if not s.record.duplicate_of]
        fixed_targets = [
            s
            for s in executed
            if (g := s.record.gate("targets")) is not None and g.passed and not s.record.submittable
        ]
        if fixed_targets:
            names = sorted({g for s in fixed_targets for g in s.record.rejected_by})
            n = len(fixed_targets)
            return "gates_rejected", (
                f"{n} candidate{'s' if n != 1 else ''} fixed the target tests but "
                f"{'were' if n != 1 else 'was'} rejected by: {', '.join(names) or 'the budget'}"
            )
        best = f"; best candidate passed {st.best.tests_passed} tests" if st.best is not None else ""
        if st.stop in _BUDGET_DIMENSIONS:
            spent = getattr(st.spend(), st.stop)
            limit = getattr(st.budget, st.stop)
            return "budget_exhausted", f"budget exhausted: {st.stop} ({_num(spent)} of {_num(limit)}){best}"
        if not executed:
            return "no_candidates", self._why_no_candidates(st)
        if st.stop == "candidates":
            return "no_candidates", f"no further candidates to try after {len(executed)}{best}"
        n = len(st.trace.rounds)
        return "budget_exhausted", f"no candidate passed every gate in {n} round{'s' if n != 1 else ''}{best}"

    def _why_no_candidates(self, st: _State) -> str:
        """What happened to the proposals when none was executed (one line)."""
        cands = st.trace.candidates
        errors = [e for r in st.trace.rounds for e in r.proposer_errors]
        if not cands:
            if errors:
                return f"the proposer returned no candidate patch: {errors[0][:200]}"
            return "the proposer returned no candidate patch"
        n = len(cands)
        head = f"{n} proposal{'s' if n != 1 else ''}"
        reasons: dict[str, int] = {}
        for c in cands:
            if c.duplicate_of:
                why = "duplicates of earlier proposals"
            elif c.error:
                why = c.error
            else:
                failed = [g for g in c.gates if not g.passed]
                why = f"{failed[0].gate}: {failed[0].detail.splitlines()[0]}" if failed else "not run"
                if failed and failed[0].gate == "applies":
                    why = failed[0].detail.splitlines()[0]
            why = _short_reason(why)
            reasons[why] = reasons.get(why, 0) + 1
        ranked = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
        listed = "; ".join(
            f"{why}" + (f" ({k})" if k > 1 and len(ranked) > 1 else "") for why, k in ranked[:3]
        )
        if not any(_applied(c) for c in cands if not c.duplicate_of):
            return f"{head}, none applied: {listed}"
        return f"{head}, none ran: {listed}"

    # -- ports, with accounting ------------------------------------------------------------------

    def _can_execute(self, st: _State) -> bool:
        return self._execution_stop(st) == ""

    def _execution_stop(self, st: _State) -> str:
        spend = st.spend()
        if st.budget.would_exceed(spend, Spend(executions=1)):
            return "executions"
        # A run gets the wall budget left minus a reserve for the bookkeeping after it.
        if st.budget.wall_s - spend.wall_s < 2 * self.config.min_wall_s:
            return "wall_s"
        return ""

    def _run_tests(
        self, st: _State, change: AppliedEdits | None, select: Sequence[str] | None
    ) -> TestOutcome:
        return self._run_many(st, [(change, select)])[0]

    def _run_many(
        self, st: _State, jobs: Sequence[tuple[AppliedEdits | None, Sequence[str] | None]]
    ) -> list[TestOutcome]:
        """Run ``jobs`` (each one execution, counted before it starts), ``parallel`` at a time;
        results in job order."""
        if not jobs:
            return []
        timeout = self._timeout(st)
        st.executions += len(jobs)

        def one(job: tuple[AppliedEdits | None, Sequence[str] | None]) -> TestOutcome:
            change, select = job
            try:
                return self.workbench.run_tests(change, select=select, timeout_s=timeout)
            except Exception as exc:  # a workbench crash is an observed failure of the run, not of the loop
                return TestOutcome(
                    errors=("<run>",),
                    failures=(Failure("<run>", type=type(exc).__name__, message=str(exc)),),
                    exit_code=-1,
                )

        workers = min(self.config.parallel, len(jobs))
        if workers <= 1:
            results = [one(job) for job in jobs]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="arcs-run") as pool:
                results = list(pool.map(one, jobs))
        self._measured(st, results)
        return results

    def _timeout(self, st: _State) -> float:
        """The timeout of the next run: the configured one for the reproduction run; afterwards a
        multiple of the measured duration (floor, configured cap), or the hang probe while nothing
        has completed. Never more than the wall budget left."""
        cfg = self.config
        cap = cfg.test_timeout_s
        if st.baseline is not None:
            if st.reference_s is None:
                cap = min(cap, max(cfg.timeout_floor_s, cfg.hang_probe_s))
            else:
                cap = min(cap, max(cfg.timeout_floor_s, cfg.timeout_factor * st.reference_s))
        left = st.budget.wall_s - st.spend().wall_s - cfg.min_wall_s
        return max(cfg.min_wall_s, min(cap, left))

    @staticmethod
    def _measured(st: _State, results: Sequence[TestOutcome]) -> None:
        """Runs that completed tell how long a run takes (the longest one counts)."""
        done = [r.duration_s for r in results if not r.timed_out]
        if done:
            st.reference_s = max(done) if st.reference_s is None else max(st.reference_s, max(done))

    def _search(
        self, st: _State, specs: Sequence[QuerySpec], *, k: int, hints: Sequence[tuple[str, int]]
    ) -> tuple[list[Evidence], dict[str, Any]]:
        """Ret_kj per query, union, redundancy filter, cut to k (ties broken by id)."""
        from indexing.model import Location, Query

        assert self.retriever is not None
        record: dict[str, Any] = {"queries": []}
        if not specs:
            return [], record
        per_query = max(2, math.ceil(k / len(specs)))
        found: dict[str, Evidence] = {}
        for spec in specs:
            query = Query(text=spec.text, k=per_query, hints=tuple(Location(p, n) for p, n in hints))
            entry: dict[str, Any] = {
                "formulation": spec.formulation,
                "text": spec.text,
                "k": per_query,
                "hints": [[p, n] for p, n in hints],
            }
            try:
                hits = self.retriever.search(query)
            except (ReplayDivergence, ReplayMismatch):
                raise
            except Exception as exc:  # retrieval trouble: this query contributes nothing
                entry["error"] = f"{type(exc).__name__}: {exc}"
                hits = []
            entry["hits"] = [hit_to_json(h) for h in hits]
            record["queries"].append(entry)
            for hit in hits:
                item = _evidence_of(hit, spec)
                if item.id not in found or found[item.id].score < item.score:
                    found[item.id] = item
        ranked = sorted(found.values(), key=lambda e: (-e.score, e.path, e.start_line, e.id))
        kept = filter_redundancy(ranked)[:k]
        return kept, record

    def _role_event(
        self,
        st: _State,
        round_index: int,
        role: str,
        *,
        ok: bool,
        error: str = "",
        usage: Usage | None = None,
        detail: str = "",
    ) -> None:
        st.trace.roles.append(
            {
                "round": round_index,
                "role": role,
                "ok": ok,
                "error": error,
                "detail": detail,
                "usage": usage_to_json(usage or Usage()),
            }
        )

    def _tests_text(self, st: _State, limit: int = 30_000) -> str:
        """Source of the target tests' files (for the quality checker)."""
        source = self.workbench.source()
        paths = list(dict.fromkeys(t.split("::", 1)[0] for t in st.targets if "::" in t))
        parts: list[str] = []
        used = 0
        for path in paths:
            text = source.read(path)
            if text is None:
                continue
            chunk = f"# {path}\n{text}"
            if used + len(chunk) > limit:
                break
            parts.append(chunk)
            used += len(chunk)
        return "\n\n".join(parts)

    @staticmethod
    def _id_of(st: _State, score: CandidateScore | None) -> str:
        if score is None:
            return ""
        return next((s.record.id for s in st.scored if s.score is score), "")


# --- helpers -------------------------------------------------------------------------------------


def normalized_size(diff: str) -> int:
    """Changed lines of ``diff`` after normalization (whitespace-only changes do not count):
    the diff size used by selection."""
    return sum(1 for line in normalize_patch(diff).splitlines() if line[:1] in "-+")


def _seq(value: object) -> Iterable[object]:
    return value if isinstance(value, list | tuple) else ()


def _num(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}" if value % 1 else str(int(value))
    return str(value)


def _fails(outcome: TestOutcome, test_id: str) -> bool:
    """``test_id`` failed in ``outcome`` (or did not run in a broken run)."""
    if test_id in outcome.failed or test_id in outcome.errors:
        return True
    if any(
        t == test_id or t.startswith(test_id + "::") or t.startswith(test_id + "[") for t in outcome.failed
    ):
        return True
    if test_id in outcome.passed:
        return False
    return outcome.broken


def _proven_failing(test_id: str, before: frozenset[str]) -> bool:
    """``test_id`` (or the test it is a parametrization/member of) failed in the baseline."""
    if test_id in before:
        return True
    return any(
        test_id.startswith(b) and test_id[len(b) :].startswith(("::", "[", "/", "#", ".")) for b in before
    )


def _selected_by(test_id: str, select: Sequence[str]) -> bool:
    return any(test_id == s or test_id.startswith((s + "::", s + "[", s + "/")) for s in select)


def _covers_all(outcome: TestOutcome, targets: Sequence[str]) -> bool:
    ran = set(outcome.ran) | set(outcome.errors)
    return all(t in ran for t in targets)


def _applied(c: CandidateRecord) -> bool:
    gate = c.gate("applies")
    return gate is not None and gate.passed


def _short_reason(text: str, limit: int = 160) -> str:
    """The first line of ``text``, without the edit index prefix, cut to ``limit``."""
    line = (text.strip().splitlines() or [""])[0]
    line = re.sub(r"^edit #\d+ \([^)]*\): ", "", line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _gate_line(g: GateResult) -> str:
    lines = g.detail.splitlines()
    head = f"{g.gate}: {lines[0] if lines else ''}".rstrip(": ")
    if len(lines) > 1:
        head += " — " + "; ".join(line.strip() for line in lines[1:4])
    return head


def _usage_delta(after: Usage, before: Usage) -> Usage:
    return Usage(
        input_tokens=after.input_tokens - before.input_tokens,
        output_tokens=after.output_tokens - before.output_tokens,
        cache_read_tokens=after.cache_read_tokens - before.cache_read_tokens,
        cache_write_tokens=after.cache_write_tokens - before.cache_write_tokens,
        usd=round(after.usd - before.usd, 10),
        calls=after.calls - before.calls,
    )


def _evidence_of(hit: SearchHit, spec: QuerySpec) -> Evidence:
    c = hit.chunk
    if c.language in ("markdown", "rst", "text"):
        source = "doc"
    elif is_test_path(c.path):
        source = "test"
    else:
        source = "code"
    why = f"{spec.formulation} query" + (f"; {', '.join(hit.reasons[:3])}" if hit.reasons else "")
    return Evidence(
        id=f"{c.path}:{c.start_line}-{c.end_line}",
        source=source,  # type: ignore[arg-type]
        path=c.path,
        start_line=c.start_line,
        end_line=c.end_line,
        text=c.text,
        symbol=c.qualified_name or c.symbol,
        score=round(hit.score, 6),
        why=why,
    )


__all__ = [
    "BudgetRefused",
    "GateConfig",
    "LoopConfig",
    "QualityMode",
    "RepairLoop",
    "RepairResult",
    "Verdict",
]
