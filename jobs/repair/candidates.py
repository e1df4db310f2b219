"""One round's candidates, from proposal to score.

:class:`Candidates` prepares each proposal (dedup by proposal and by normalized patch, apply,
static gates: applies, syntax, policy, size, threats), runs the target tests of up to ``parallel``
candidates at a time (how many may run is fixed up front from the budget), then the targets
gate and, when the targets pass, the regression suite; scores every candidate and encodes its
feedback. Tier 0 also combines candidates that each fixed different targets (:meth:`pairs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from jobs.repair.diffing import diff_stats, patch_key
from jobs.repair.edits import AppliedEdits, EditError
from jobs.repair.feedback import encode, verified_snippet
from jobs.repair.gates import applies_gate, policy_gate, size_gate, syntax_gate
from jobs.repair.loop_config import LoopConfig
from jobs.repair.model import Feedback, GateResult, Proposal
from jobs.repair.ports import Clock
from jobs.repair.state import Pending, RunState, Scored, covers_all, narrowing
from jobs.repair.testruns import TestRuns
from jobs.repair.threats import TaskNames, note_refusals, threat_gate
from jobs.repair.tiers import TierConfig
from jobs.repair.trace import CandidateRecord, RoundRecord
from jobs.repair.workbench import CandidateRun, TestOutcome, Workbench

HANG_STREAK = 5
"""Tier 0 stops after this many candidates in a row hung in the same test: its templates are
ranked best first, and every further one would cost the hang limit again for the same loop."""


def hung_in(run: TestOutcome | None) -> tuple[str, float]:
    """The test ``run`` hung in (the ``timeout`` failure; ``<run>`` when the whole run was killed)
    and how long it ran, or ``("", 0.0)`` when it did not time out."""
    if run is None or not run.timed_out:
        return "", 0.0
    test = next((f.test_id for f in run.failures if f.type == "timeout"), "<run>")
    return test, run.hang_s or run.duration_s


class Candidates:
    """Prepares, gates, runs and scores candidates (see the module docstring)."""

    def __init__(self, workbench: Workbench, config: LoopConfig, clock: Clock, runs: TestRuns) -> None:
        self.workbench = workbench
        self.config = config
        self.clock = clock
        self.runs = runs
        self.streak: list[tuple[str, float]] = []
        """The executed candidates since the last one that did not hang: (test, seconds) each."""

    def execute_proposals(
        self,
        st: RunState,
        record: RoundRecord,
        proposals: Sequence[Proposal],
        cfg: TierConfig,
        feedbacks: list[tuple[int, int, Feedback]],
    ) -> int:
        """Prepare, gate and run ``proposals`` as this round's next candidates; how many were new."""
        new = 0
        batch: list[Pending] = []
        halted = False
        extra = -1  # candidates still to run after the first plausible one (-1: none passed yet)
        offset = len(record.candidates)
        for i, proposal in enumerate(proposals):
            cand, fb, fresh, applied = self._prepare(st, record, offset + i, proposal)
            record.candidates.append(cand)
            new += fresh
            if fb is not None:
                feedbacks.append((-cand.tests_passed, offset + i, fb))
            if applied is not None:
                batch.append(Pending(cand, applied, order=offset + i))
            last = i + 1 == len(proposals)
            if batch and (len(batch) >= self.config.parallel or last):
                self._first_runs(st, batch)
                for pending in batch:
                    fb = self._complete(st, record, pending, halted=halted)
                    feedbacks.append((-pending.cand.tests_passed, pending.order, fb))
                    if extra > 0:
                        extra -= 1
                    elif extra < 0 and pending.cand.submittable and not cfg.exhaust_round:
                        # Plausible is not right (#29): a few more candidates, then the rule picks.
                        extra = self.config.plausible_extra
                    if extra == 0:
                        halted = True
                    if pending.first is not None:
                        self._count_hang(pending.first)
                batch = []
                if not halted and not cfg.llm and self._hang_stop(st, record, len(proposals) - i - 1):
                    break
            if halted:
                break
            if not last and not st.meter.can_execute():
                if batch:  # they cannot run: recorded as stopped by the budget
                    self._first_runs(st, batch)
                    for pending in batch:
                        feedbacks.append(
                            (0, pending.order, self._complete(st, record, pending, halted=halted))
                        )
                record.events.append(
                    f"{len(proposals) - i - 1} candidates not run: {st.meter.execution_stop()}"
                )
                st.acc.stop = st.meter.execution_stop()
                break
        return new

    def _count_hang(self, first: TestOutcome) -> None:
        test, seconds = hung_in(first)
        if not test:
            self.streak = []
        elif self.streak and self.streak[-1][0] != test:
            self.streak = [(test, seconds)]
        else:
            self.streak.append((test, seconds))

    def _hang_stop(self, st: RunState, record: RoundRecord, left: int) -> bool:
        """After :data:`HANG_STREAK` candidates in a row hung in the same test: stop the search
        (``stop = "hangs"``) with that as its reason."""
        if len(self.streak) < HANG_STREAK:
            return False
        test = self.streak[-1][0]
        times = [s for _, s in self.streak]
        each = (
            f"{min(times):.1f} s"
            if max(times) - min(times) < 0.05
            else f"{min(times):.1f}-{max(times):.1f} s"
        )
        st.acc.stop = "hangs"
        st.acc.hang_stop = (
            f"{len(self.streak)} candidates in a row hung in `{test}` (each stopped after {each})"
        )
        if left > 0:
            record.events.append(f"{left} candidates not run: {st.acc.hang_stop}")
        else:
            record.events.append(f"search stopped: {st.acc.hang_stop}")
        return True

    def pairs(self, st: RunState) -> list[Proposal]:
        """Up to ``config.pairs`` proposals, each the edits of two executed candidates that fixed
        different targets and broke nothing that was not failing before (never tried yet)."""
        if len(set(st.base.targets)) < 2:
            return []
        partial: list[tuple[Scored, frozenset[str]]] = []
        for s in st.search.scored:
            rec = s.record
            if rec.duplicate_of or s.outcome is None or rec.proposer == "pair" or s.outcome.timed_out:
                continue
            fixed = st.base.fixed_targets(s.outcome)
            if fixed and not st.base.new_failures(s.outcome):
                partial.append((s, fixed))
        partial.sort(key=lambda item: (-len(item[1]), item[0].score.diff_lines, item[0].score.order))
        out: list[Proposal] = []
        extra = len(st.base.extra_edits)
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
                if proposal.key in st.search.tried:
                    continue
                out.append(proposal)
                if len(out) >= self.config.pairs:
                    return out
        return out

    def _prepare(
        self, st: RunState, record: RoundRecord, index: int, proposal: Proposal
    ) -> tuple[CandidateRecord, Feedback | None, int, AppliedEdits | None]:
        """Apply and statically gate one proposal. Returns its record, its feedback (when it ends
        here), 1 if it was new, and the change when it is ready to execute."""
        cand = CandidateRecord(
            id=f"r{record.index + 1}c{index + 1}",
            round=record.index,
            proposer=proposal.proposer,
            variant=proposal.variant,
            explanation=proposal.explanation,
            proposal_key=proposal.key,
            edits=[*st.base.extra_edits, *proposal.edits],
            usage=proposal.usage,
        )
        key = cand.proposal_key
        if not proposal.edits:
            cand.error = proposal.explanation or "the proposal has no edits"
            return cand, encode(record.index, None, edit_errors=[cand.error]), 0, None
        if key in st.search.by_proposal:
            cand.duplicate_of = st.search.by_proposal[key]
            return cand, None, 0, None
        st.search.tried.add(key)
        st.search.by_proposal[key] = cand.id
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
        if cand.patch_key in st.search.by_patch or cand.patch_key in st.search.pending:
            # Same normalized patch: not executed again, but it votes for the earlier candidate.
            cand.gates = []
            if cand.patch_key in st.search.by_patch:
                earlier = st.search.by_patch[cand.patch_key]
                cand.duplicate_of = earlier.record.id
                st.search.score(
                    cand,
                    earlier.outcome,
                    earlier.score.tests_passed,
                    False,
                    rejected=st.acc.rejected,
                    targets_fixed=earlier.score.targets_fixed,
                )
            else:
                cand.duplicate_of = st.search.pending[cand.patch_key]
                st.search.deferred.append(cand)
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
            # Before any run: a refused candidate is never executed, verified or published.
            threat_gate(applied, TaskNames.of(st.task, st.base.outcome.failures if st.base.outcome else ())),
        ]
        cand.gates.extend(static)
        note_refusals(st.trace.notices, static[-1], cand.id)
        cand.timings["gates_s"] = self.clock.monotonic() - t
        rejected = [g for g in static if not g.passed]
        if rejected:
            scored = st.search.score(cand, None, 0, False, rejected=st.acc.rejected)
            st.search.by_patch[cand.patch_key] = scored
            return cand, encode(record.index, None, gate_failures=[gate_line(g) for g in rejected]), 1, None
        st.search.pending[cand.patch_key] = cand.id
        return cand, None, 1, applied

    def _first_runs(self, st: RunState, batch: Sequence[Pending]) -> None:
        """The target runs of a batch of candidates, concurrently when ``parallel`` > 1.

        How many run is decided up front from the budget (deterministic); the rest are marked
        as stopped by the budget.
        """
        allowed = st.meter.runs_allowed(len(batch))
        select = narrowing(st.base.targets) if st.base.targets else self.config.regression_select
        jobs = [(p.applied, select) for p in batch[:allowed]]
        t = self.clock.monotonic()
        outcomes = self.runs.run_many(st, jobs)
        elapsed = self.clock.monotonic() - t
        for pending, first in zip(batch, outcomes, strict=False):
            pending.first = first
            pending.cand.timings["execute_s"] = elapsed / max(1, len(jobs))
        for pending in batch[allowed:]:
            pending.stopped = f"budget: {st.meter.execution_stop() or 'executions'}"

    def _complete(self, st: RunState, record: RoundRecord, pending: Pending, *, halted: bool) -> Feedback:
        """Targets gate, regression run, score, feedback of one candidate whose target run is done."""
        cand, applied = pending.cand, pending.applied
        t = self.clock.monotonic()
        run, gates = self._execute(st, applied, pending.first, stopped=pending.stopped, halted=halted)
        cand.timings["execute_s"] = cand.timings.get("execute_s", 0.0) + (self.clock.monotonic() - t)
        cand.run = run
        cand.gates.extend(gates)
        st.search.pending.pop(cand.patch_key, None)
        outcome = run.full or run.targets
        tests_passed = st.base.tests_passed(run, self.config.regression_select)
        submittable = run.full is not None and all(g.passed for g in cand.gates) and not run.stopped
        fixed = len(st.base.fixed_targets(outcome)) if outcome is not None and st.base.targets else 0
        scored = st.search.score(
            cand, outcome, tests_passed, submittable, rejected=st.acc.rejected, targets_fixed=fixed
        )
        st.search.by_patch[cand.patch_key] = scored
        for dupe in [d for d in st.search.deferred if d.duplicate_of == cand.id]:
            st.search.deferred.remove(dupe)
            st.search.score(dupe, outcome, tests_passed, False, rejected=st.acc.rejected, targets_fixed=fixed)
        if outcome is not None and tests_passed > 0:
            st.search.last_diff, st.search.last_explanation = cand.diff, cand.explanation
            if st.search.best is scored.score:
                st.search.soup.append(
                    verified_snippet(cand.id, cand.diff, tests_passed=tests_passed, round_index=record.index)
                )
        elif outcome is not None and not st.search.last_diff:
            st.search.last_diff, st.search.last_explanation = cand.diff, cand.explanation
        # Failing targets show up as failures; other gate rejections (regressions) are named.
        failed_gates = [gate_line(g) for g in gates if not g.passed and g.gate != "targets"]
        fb = encode(
            record.index,
            outcome,
            targets=st.base.targets,
            baseline_passed=st.base.passed,
            baseline_errors=st.base.errors,
            gate_failures=failed_gates,
        )
        if run.stopped:
            fb = replace(fb, summary=f"{fb.summary}; {run.stopped}")
        return fb

    def _execute(
        self,
        st: RunState,
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
            return CandidateRun(stopped=stopped or f"budget: {st.meter.execution_stop()}"), gates
        select = narrowing(st.base.targets) if st.base.targets else self.config.regression_select
        executions = 1
        tgate = st.base.targets_gate(first)
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
        elif not st.meter.can_execute():
            gates.append(tgate)
            return CandidateRun(
                targets=first, executions=executions, stopped=f"budget: {st.meter.execution_stop()}"
            ), gates
        else:
            full = self.runs.run_many(st, [(applied, self.config.regression_select)])[0]
            executions += 1
            tgate = (
                st.base.targets_gate(full)
                if not full.selected or covers_all(full, st.base.targets)
                else tgate
            )
        gates.append(tgate)
        gates.append(st.base.regression_gate(full, self.config.regression_select))
        return CandidateRun(targets=first, full=full, executions=executions), gates


def gate_line(g: GateResult) -> str:
    """A rejected gate as one feedback line."""
    lines = g.detail.splitlines()
    head = f"{g.gate}: {lines[0] if lines else ''}".rstrip(": ")
    if len(lines) > 1:
        head += " — " + "; ".join(line.strip() for line in lines[1:4])
    return head


__all__ = ["Candidates", "gate_line"]
