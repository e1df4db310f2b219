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
   verified snippets from the in-memory knowledge soup, plus — for tiers that retrieve — the
   functions the failing tests ran, from one traced run of the tests,
   :mod:`~jobs.repair.spectrum_context`); compose; propose; then per candidate:
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

This module holds the controller (tiers, rounds, the role calls, retrieval); its parts live in
:mod:`~jobs.repair.reproduce` (step 1), :mod:`~jobs.repair.candidates` (prepare, gate, run and
score a candidate), :mod:`~jobs.repair.verify` (final verification, salvage),
:mod:`~jobs.repair.verdicts` (the result and its reason), :mod:`~jobs.repair.testruns` (runs and
their timeouts), :mod:`~jobs.repair.meter` (the budget), :mod:`~jobs.repair.llm_guard` (role calls
within the budget), :mod:`~jobs.repair.state` (the run's state values), and the values
:mod:`~jobs.repair.spec`, :mod:`~jobs.repair.loop_config` and :mod:`~jobs.repair.result`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from indexing.languages import is_test_path
from jobs.repair import roles
from jobs.repair.behaviour import BehaviourProbe
from jobs.repair.budget import Budget
from jobs.repair.callees import callee_context
from jobs.repair.candidates import Candidates
from jobs.repair.change_context import ChangePrior
from jobs.repair.feedback import (
    QuerySpec,
    carried_evidence,
    failure_hints,
    failure_query,
    filter_redundancy,
    fit_evidence,
    fit_history,
    formulate_queries,
    frame_context,
    merge_round,
)
from jobs.repair.llm import LLM, LLMError
from jobs.repair.llm_guard import BudgetRefused, GuardedLLM
from jobs.repair.loop_config import GateConfig, LoopConfig, QualityMode
from jobs.repair.meter import BudgetMeter
from jobs.repair.model import Evidence, Feedback, GateResult, Proposal, Usage
from jobs.repair.plan import PlanOutcome, make_plan
from jobs.repair.ports import Clock, Interrupt, ProposalRequest, Proposer
from jobs.repair.pricing import PriceTable
from jobs.repair.prompts import pack_context
from jobs.repair.proposers.anthropic import context_budget
from jobs.repair.proposers.replay import ReplayDivergence
from jobs.repair.proposers.tooluse import RoleTools
from jobs.repair.reproduce import Reproduction
from jobs.repair.result import RepairResult, Verdict
from jobs.repair.spec import RepairSpec
from jobs.repair.spectrum import call_path
from jobs.repair.spectrum_context import RECORDED, RecordedSpectrum, localize, spectrum_evidence
from jobs.repair.state import RunState, Scored
from jobs.repair.task import RepairTask
from jobs.repair.testruns import TestRuns
from jobs.repair.tiers import TierConfig, TierRequest, resolve_tiers
from jobs.repair.tools_session import (
    RecordedTools,
    explored_evidence,
    merge_explored,
    round_tools,
    tool_evidence,
)
from jobs.repair.trace import ReplayMismatch, RoundRecord, Trace, evidence_to_json, hit_to_json
from jobs.repair.verdicts import finish
from jobs.repair.verify import Verifier
from jobs.repair.workbench import Workbench

if TYPE_CHECKING:
    from indexing.model import Query, SearchHit

_FATAL_LLM_ERRORS = frozenset({"auth", "bad_request"})


class Retriever(Protocol):
    """The retrieval port of the loop (``indexing.retriever.Retriever`` conforms; declared here so
    the core does not import the effectful retriever module)."""

    def search(self, query: Query) -> list[SearchHit]:
        """Flat ranked search over chunks."""
        ...


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
        price_table: PriceTable | None = None,
        tool_replay: RecordedTools | None = None,
        spectrum_replay: RecordedSpectrum | None = None,
    ) -> None:
        self.retriever = retriever
        self.proposer = proposer
        self.workbench = workbench
        self.clock = clock
        self.llm = llm
        self.config = config or LoopConfig()
        self.interrupt = interrupt
        self.price_table = price_table
        """Prices the budget meter uses for role calls (None: the packaged ``pricing.json``)."""
        self.tool_replay = tool_replay
        """Recorded tool results served instead of running the tools (``arcs replay``)."""
        self.spectrum_replay = spectrum_replay
        """The recorded call path served instead of tracing the tests (``arcs replay``)."""
        self._prior: ChangePrior | None = None
        """The run's retrieval prior from ``task.changes`` (None: no change known, no retriever)."""

    # -- entry point -----------------------------------------------------------------------------

    def run(
        self,
        spec: RepairSpec | RepairTask,
        budget: Budget | None = None,
        tier: TierRequest = "auto",
        *,
        meter: BudgetMeter | None = None,
    ) -> RepairResult:
        """Reproduce, then repair ``spec.task`` within ``spec.budget`` using the tiers ``spec.tier``
        resolves to; ``spec.loop`` becomes this loop's config. ``meter``: a window of the repair's
        meter (:meth:`BudgetMeter.window`) the loop spends in; its owner records the trace's
        spend. None: the loop meters ``spec.budget`` itself.

        ``run(task, budget, tier)`` (the signature before :class:`RepairSpec`) runs with the loop's
        own config. Raises :class:`jobs.repair.tiers.TierUnavailable` for an LLM tier without an LLM
        (a configuration error, before anything runs).
        """
        if isinstance(spec, RepairTask):  # the old signature, until jobs/fix.py builds a RepairSpec
            spec = RepairSpec(task=spec, budget=budget or Budget(), tier=tier, loop=self.config)
        self.config = spec.loop
        task, budget, tier = spec.task, spec.budget, spec.tier
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
        owns_meter = meter is None
        if meter is None:
            meter = BudgetMeter(
                budget, self.clock, price_table=self.price_table, reserve_s=self.config.min_wall_s
            )
        st = RunState(task=task, trace=trace, meter=meter, owns_meter=owns_meter)
        self._prior = (
            ChangePrior.of(task.changes, self.workbench.source())
            if task.changes is not None and self.retriever is not None
            else None
        )
        commands = getattr(self.workbench, "commands", None)
        if isinstance(commands, Mapping):
            trace.commands = dict(commands)
            if commands.get("note"):
                trace.notices.append(str(commands["note"]))
        guard = GuardedLLM(self.llm, meter) if self.llm is not None else None
        # The parts of one run; every piece of run state lives in `st`.
        runs = TestRuns(self.workbench, self.config)
        self._cands = Candidates(self.workbench, self.config, self.clock, runs)
        self._verifier = Verifier(self.workbench, self.config, self.clock, runs)
        probe = BehaviourProbe(self.workbench, timeout_s=self.config.test_timeout_s)
        reproduction = Reproduction(self.workbench, self.config, self.clock, runs, self._retrieve_for_design)
        if self._interrupted(st, "before reproduction"):
            return finish(st, self._verifier, ("interrupted", st.acc.interrupted))
        verdict = reproduction.reproduce(st, guard)
        if verdict is None:
            for cfg in tier_plan.tiers:
                trace.tiers.append(cfg.name)
                self._run_tier(st, cfg, guard)
                if st.acc.settled:
                    break
                if st.acc.interrupted:
                    break
                if st.acc.stop and st.acc.stop != "rounds":
                    break
            return finish(st, self._verifier, probe=probe)
        return finish(st, self._verifier, verdict)

    def _run_tier(self, st: RunState, cfg: TierConfig, guard: GuardedLLM | None) -> None:
        st.acc.stop = ""
        rounds = cfg.rounds_within(st.meter.rounds_left())
        if rounds <= 0:
            st.acc.stop = "iterations"
            return
        plan: PlanOutcome | None = None
        for _ in range(rounds):
            if self._interrupted(st, f"before round {len(st.trace.rounds) + 1}"):
                return
            stop = st.meter.round_stop(llm=cfg.llm)
            if stop:
                st.acc.stop = stop
                return
            record, plan, new = self._round(st, cfg, guard, plan)
            self._after_round(st, cfg, guard, record)
            if st.acc.settled:
                return
            if not new and not cfg.llm:
                st.acc.stop = "candidates"  # templates have nothing left to try
                return
            if st.acc.stop:
                return
        st.acc.stop = "rounds"

    def _interrupted(self, st: RunState, where: str) -> bool:
        """Ask the interrupt (when there is one); on a reason record it and answer True."""
        if self.interrupt is None or st.acc.interrupted:
            return bool(st.acc.interrupted)
        st.acc.checks += 1
        try:
            reason = self.interrupt.check()
        except Exception as exc:  # errors are data: a failed check is not a reason to stop
            st.trace.notices.append(f"interrupt check {st.acc.checks} failed: {type(exc).__name__}: {exc}")
            return False
        if not reason:
            return False
        st.acc.interrupted = " ".join(str(reason).split()) or "interrupted"
        st.trace.interrupt = {"check": st.acc.checks, "where": where, "reason": st.acc.interrupted}
        st.trace.notices.append(f"interrupted {where}: {st.acc.interrupted}")
        return True

    def _round(
        self,
        st: RunState,
        cfg: TierConfig,
        guard: GuardedLLM | None,
        previous: PlanOutcome | None,
        *,
        phase: str = "repair",
    ) -> tuple[RoundRecord, PlanOutcome, int]:
        t0 = self.clock.monotonic()
        record = RoundRecord(index=len(st.trace.rounds), tier=cfg.name, phase=phase)
        st.trace.rounds.append(record)
        st.meter.count_round()
        usage_before = st.meter.usage
        task = st.task
        source = self.workbench.source()
        latest = st.search.history[-1] if st.search.history else None
        hints = failure_hints([*(latest.failures if latest else ()), *task.failures], task.hints)
        pinned = frame_context(source, hints, max_items=self.config.max_frame_context) if cfg.llm else []
        # What the failing tests call (the code to change when the stack holds only the test): a
        # lookup in the repository, so only for tiers that retrieve (k > 0).
        failing = [*(latest.failures if latest else ()), *task.failures]
        # Rounds of this tier already spent without a fix: later rounds explore further (#15).
        explore = sum(1 for r in st.trace.rounds[:-1] if r.tier == cfg.name) if cfg.llm else 0
        called = callee_context(source, failing, explore=explore) if cfg.llm and cfg.k > 0 else []
        # The functions the failing tests ran and the passing ones did not: one traced run per
        # repair (#15); later rounds reach the next-ranked suspects (the shown ones are skipped).
        t = self.clock.monotonic()
        # Tier 0 ranks its edit sites by the same traced run (#29).
        loc = (
            localize(st, self.workbench, source, self.config, replay=self.spectrum_replay)
            if cfg.k > 0 or (not cfg.llm and self.config.tier0_spectrum)
            else None
        )
        spotted = (
            spectrum_evidence(
                source,
                loc.suspects,
                budget_chars=self.config.spectrum_chars,
                failed=loc.failed,
                passed=loc.passed,
                skip=st.search.shown.keys(),
                covered=pinned,
            )
            if loc is not None and cfg.llm
            else []
        )
        if spent := self.clock.monotonic() - t:
            record.timings["spectrum_s"] = spent

        # the round's tools (None when the tier allows none): the planner's calls come first and
        # count in the same limit as the proposer's (issue #15)
        tools = round_tools(
            calls=cfg.tool_calls if self.config.tools else 0,
            source=source,
            retriever=self.retriever,
            workbench=self.workbench,
            runs=self._cands.runs,
            st=st,
            max_chars=self.config.tool_result_chars,
            replay=self.tool_replay,
            context_chars=self.config.prompt_chars,
        )

        # plan (the planner converses on the unguarded model; its turns are charged to the guard's meter)
        planner_tools = RoleTools(tools, guard.inner, guard.meter) if tools and guard else None
        t = self.clock.monotonic()
        plan = make_plan(
            task,
            enabled=cfg.plan,
            max_subgoals=cfg.max_subgoals,
            llm=guard if cfg.llm else None,
            evidence=[*pinned, *spotted[:2]],
            feedback=st.search.history,
            previous=previous,
            tools=planner_tools,
        )
        record.plan = plan.to_json()
        if plan.source == "llm" and previous is None:
            st.role_event(record.index, "plan", ok=True, usage=plan.usage)
        elif plan.error:
            st.role_event(record.index, "plan", ok=False, error=plan.error, usage=plan.usage)
        record.timings["plan_s"] = self.clock.monotonic() - t

        # retrieve (plan-conditioned, refreshed from feedback) + knowledge soup
        t = self.clock.monotonic()
        retrieved: list[Evidence] = []
        if cfg.k > 0 and self.retriever is not None:
            specs = formulate_queries(
                task.spec_text(),
                plan=plan.subgoals,
                feedback=latest,
                candidate_diff=st.search.last_diff,
                explanation=st.search.last_explanation,
                failure=failure_query(task.failures) if explore else "",
            )
            shown = frozenset(st.search.shown) if explore else frozenset()
            retrieved, record.retrieval = self._search(st, specs, k=cfg.k, hints=hints, exclude=shown)
        soup = st.search.soup[-self.config.soup_size :] if cfg.k > 0 else []
        union = filter_redundancy([*pinned, *spotted, *retrieved, *called, *soup])
        # the code earlier rounds' tool calls showed, then what earlier rounds were shown (#15)
        found = tool_evidence(st.search.explored, union, budget_chars=self.config.evidence_chars // 2)
        union += found if cfg.llm else []
        union += carried_evidence(st.search.shown.values(), union) if cfg.llm else []
        evidence, dropped = fit_evidence(
            union, budget_chars=self.config.evidence_chars, pinned=[e.id for e in pinned]
        )
        if dropped:
            record.retrieval.setdefault("dropped", list(dropped))
        record.evidence = [evidence_to_json(e) for e in evidence]
        finds = {e.id for e in found}
        record.tool_evidence = [evidence_to_json(e) for e in evidence if e.id in finds]
        record.timings["retrieve_s"] = self.clock.monotonic() - t

        # compose
        history, _ = fit_history(st.search.history, budget_chars=self.config.history_chars)
        record.feedback_rounds = len(history)
        request = ProposalRequest(
            task=task,
            source=source,
            round=record.index,
            evidence=tuple(evidence),
            plan=plan.subgoals,
            feedback=history,
            n=cfg.candidates,
            tried=frozenset(st.search.tried),
            tools=tools,
            call_path=call_path(loc, recorded=RECORDED) if not cfg.llm else None,
        )
        t = self.clock.monotonic()
        packed = pack_context(
            task,
            evidence=evidence,
            plan=plan.subgoals,
            feedback=history,
            budget_chars=context_budget(self.config.prompt_chars),  # what the proposer packs
        )
        record.prompt = packed.text
        if cfg.llm:
            kept = set(packed.evidence_ids)
            st.search.shown.update(
                (e.id, e)
                for e in evidence
                if e.id in kept and e.id not in st.search.shown and e.id not in finds
            )
        record.timings["compose_s"] = self.clock.monotonic() - t

        # propose
        t = self.clock.monotonic()
        proposals = self._propose(st, record, request, cfg)
        record.timings["propose_s"] = self.clock.monotonic() - t
        if request.tools is not None:
            record.tool_calls = list(request.tools.log)
            new_finds = explored_evidence(record.tool_calls, round_index=record.index + 1)
            st.search.explored = merge_explored(st.search.explored, new_finds)

        # execute every candidate (or up to the first submittable one for tier 0), target runs of
        # up to `parallel` candidates at a time
        feedbacks: list[tuple[int, int, Feedback]] = []
        new = self._cands.execute_proposals(st, record, proposals, cfg, feedbacks)
        if (
            not cfg.llm
            and self.config.pairs > 0
            and not st.acc.stop
            and not any(c.submittable for c in record.candidates)
        ):
            # Tier 0 keeps searching: candidates that each fixed different targets, combined.
            pairs = self._cands.pairs(st)
            if pairs:
                record.events.append(
                    f"{len(pairs)} pair{'s' if len(pairs) != 1 else ''} of partial candidates combined"
                )
                new += self._cands.execute_proposals(st, record, pairs, cfg, feedbacks)
        merged = merge_round(record.index, [fb for _, _, fb in sorted(feedbacks, key=lambda x: (x[0], x[1]))])
        if merged is not None:
            st.search.history.append(merged)
            record.feedback = merged
        usage = _usage_delta(st.meter.usage, usage_before)
        record.usage = usage
        record.best_tests_passed = st.search.best.tests_passed if st.search.best is not None else None
        record.best_candidate = st.search.id_of(st.search.best)
        record.spend_after = st.meter.spend()
        total = self.clock.monotonic() - t0
        execute = sum(c.timings.get("execute_s", 0.0) for c in record.candidates)
        record.timings["execute_s"] = execute
        record.timings["total_s"] = total
        llm_wait = record.timings["propose_s"] if cfg.llm else 0.0
        if plan.source == "llm" and previous is None:
            llm_wait += record.timings["plan_s"]
        record.timings["overhead_s"] = max(
            0.0, total - execute - llm_wait - record.timings.get("spectrum_s", 0.0)
        )
        return record, plan, new

    def _propose(
        self, st: RunState, record: RoundRecord, request: ProposalRequest, cfg: TierConfig
    ) -> list[Proposal]:
        remaining = st.meter.offered(self.config.llm_safety) if cfg.llm else st.meter.remaining()
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
                st.acc.proposer_dead = str(err)
        stop = getattr(self.proposer, "last_budget_stop", None)
        if stop:
            # The proposer cannot afford another call: this round is the last one.
            record.events.append(f"proposer stopped by the budget ({stop})")
            st.acc.stop = str(stop)
        for p in proposals:
            st.meter.charge(p.usage)
        if not proposals and not record.proposer_errors:
            record.events.append("the proposer returned no candidates")
        return proposals

    # -- selection, quality check, clarifier, revert ---------------------------------------------

    def _needs_quality_check(self, st: RunState) -> bool:
        if self.llm is None or self.config.quality_check == "never":
            return False
        if self.config.quality_check == "always":
            return True
        return st.task.kind == "issue" and (st.base.synthesized or not st.base.targets)

    def _after_round(
        self, st: RunState, cfg: TierConfig, guard: GuardedLLM | None, record: RoundRecord
    ) -> None:
        chosen = st.search.select(st.acc.rejected)
        if chosen is None:
            return
        if guard is None or not self._needs_quality_check(st):
            # The final verification decides; a candidate it rejects leaves the pool.
            while chosen is not None and not self._verifier.accept(st, chosen):
                chosen = st.search.select(st.acc.rejected)
            return
        if self._quality(st, guard, chosen, record):
            self._verifier.accept(st, chosen)
            return
        first_verified = chosen
        if st.acc.clarified:
            st.acc.reverted = first_verified
            return
        st.acc.clarified = True
        attempts = [s.record.explanation for s in st.search.scored if s.record.explanation][-4:]
        try:
            clarification = roles.clarify(guard, st.task, st.search.history, attempts=attempts)
        except LLMError as exc:
            st.role_event(record.index, "clarify", ok=False, error=str(exc))
            st.acc.reverted = first_verified
            st.acc.quality_reason = f"the clarifier failed ({exc})"
            return
        st.role_event(
            record.index,
            "clarify",
            ok=clarification.ok,
            error=clarification.error,
            usage=clarification.usage,
        )
        if not clarification.ok or st.meter.round_stop(llm=cfg.llm):
            st.acc.reverted = first_verified
            if not clarification.ok:
                st.acc.quality_reason = f"the clarifier gave no usable restatement ({clarification.error})"
            else:
                st.acc.quality_reason = "no budget left to regenerate after clarification"
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
        again = st.search.select(st.acc.rejected)
        if again is not None and again is not chosen and self._quality(st, guard, again, regen):
            if not self._verifier.accept(st, again):
                st.acc.reverted = first_verified
            return
        st.acc.reverted = first_verified

    def _quality(self, st: RunState, guard: GuardedLLM, chosen: Scored, record: RoundRecord) -> bool:
        """Code Quality Checker (imagined execution); its result becomes the ``quality`` gate."""
        try:
            verdict = roles.check_quality(guard, st.task, chosen.record.diff, st.base.tests_text)
        except LLMError as exc:
            gate = GateResult("quality", False, f"the quality checker could not run: {exc}")
            st.role_event(record.index, "check_quality", ok=False, error=str(exc))
        else:
            detail = "accepted by imagined execution" if verdict.accept else f"rejected: {verdict.reasoning}"
            gate = GateResult("quality", verdict.accept, detail.strip(), {"checks": list(verdict.checks)})
            st.role_event(
                record.index,
                "check_quality",
                ok=verdict.accept,
                error=verdict.error,
                usage=verdict.usage,
                detail=chosen.record.id,
            )
        chosen.record.gates.append(gate)
        if not gate.passed:
            st.acc.rejected.add(chosen.record.id)
            chosen.record.submittable = False
            st.acc.quality_reason = gate.detail
        return gate.passed

    # -- retrieval -------------------------------------------------------------------------------

    def _retrieve_for_design(self, st: RunState) -> list[Evidence]:
        if self.retriever is None:
            return []
        spec = QuerySpec("question", " ".join(st.task.spec_text().split())[:1000])
        found, record = self._search(st, [spec], k=5, hints=())
        st.trace.reproduction.retrieval = record
        return found

    def _search(
        self,
        st: RunState,
        specs: Sequence[QuerySpec],
        *,
        k: int,
        hints: Sequence[tuple[str, int]],
        exclude: frozenset[str] = frozenset(),
    ) -> tuple[list[Evidence], dict[str, Any]]:
        """Ret_kj per query, union, redundancy filter, cut to k (ties broken by id). With a change
        since green, the first query also hints the changed files and the change prior is added to
        the scores (:class:`~jobs.repair.change_context.ChangePrior`). ``exclude``: ids shown in
        earlier rounds, left out (each query then asks for twice as many) so that a later round
        retrieves code not shown yet (#15)."""
        from indexing.model import Location, Query

        assert self.retriever is not None
        record: dict[str, Any] = {"queries": []}
        if not specs:
            return [], record
        per_query = max(2, math.ceil(k / len(specs))) * (2 if exclude else 1)
        found: dict[str, Evidence] = {}
        prior = self._prior
        for i, spec in enumerate(specs):
            spec_hints = (*hints, *prior.file_hints(hints)) if prior is not None and i == 0 else hints
            query = Query(text=spec.text, k=per_query, hints=tuple(Location(p, n) for p, n in spec_hints))
            entry: dict[str, Any] = {
                "formulation": spec.formulation,
                "text": spec.text,
                "k": per_query,
                "hints": [[p, n] for p, n in spec_hints],
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
                if item.id in exclude:
                    continue
                item = prior.apply(item) if prior is not None else item
                if item.id not in found or found[item.id].score < item.score:
                    found[item.id] = item
        ranked = sorted(found.values(), key=lambda e: (-e.score, e.path, e.start_line, e.id))
        kept = filter_redundancy(ranked)[:k]
        return kept, record


# --- helpers -------------------------------------------------------------------------------------


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
    "RepairSpec",
    "Verdict",
]
