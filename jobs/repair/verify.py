"""Acceptance: the final verification of a selected candidate, and salvage of a partial fix.

:class:`Verifier` runs the exact test command on the patched tree (a fresh copy) before any
candidate is returned. Exit 0 accepts it (``fixed``); failing only on tests the baseline saw fail
accepts it as ``partial``; anything else gives it a failed ``verification`` gate and takes it out
of the pool. When no candidate passed every gate, :meth:`Verifier.salvage` looks for the best one
that fixed some targets and broke nothing, verified the same way.
"""

from __future__ import annotations

from typing import Any

from jobs.repair.loop_config import LoopConfig
from jobs.repair.model import GateResult
from jobs.repair.ports import Clock
from jobs.repair.state import RunState, Scored, proven_failing
from jobs.repair.testruns import TestRuns, crashed
from jobs.repair.trace import CandidateRecord
from jobs.repair.workbench import RUN_ERROR_PREFIX, TestOutcome, Workbench


class Verifier:
    """The final verification (see the module docstring)."""

    def __init__(self, workbench: Workbench, config: LoopConfig, clock: Clock, runs: TestRuns) -> None:
        self.workbench = workbench
        self.config = config
        self.clock = clock
        self.runs = runs

    def accept(self, st: RunState, chosen: Scored) -> bool:
        """The final verification of a selected candidate: the exact command on the patched tree,
        in a fresh copy. Exit 0 -> accepted (``fixed``). Failing only on tests the baseline saw
        fail -> accepted as ``partial``. Anything else -> the candidate gets a failed
        ``verification`` gate, leaves the pool, and the search goes on."""
        rec = chosen.record
        verified = self.verify(st, rec)
        if verified is None:
            return False
        outcome, data = verified
        command = str(data["command"])
        if data["passed_verification"]:
            rec.gates.append(
                GateResult("verification", True, f"`{command}` exited 0 on the patched tree", data)
            )
            st.acc.accepted, st.acc.verification = chosen, data
            return True
        pre, new = list(data["pre_existing"]), list(data["new_failures"])
        if pre and not new and not outcome.timed_out and not outcome.environment:
            detail = (
                f"`{command}` still fails (exit {outcome.exit_code}), only on tests that failed before the "
                f"change: {', '.join(pre[:5])}" + (" ..." if len(pre) > 5 else "")
            )
            rec.gates.append(GateResult("verification", False, detail, data))
            st.acc.accepted, st.acc.verification, st.acc.pre_existing = chosen, data, tuple(pre)
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
        st.acc.rejected.add(rec.id)
        return False

    def verify(self, st: RunState, rec: CandidateRecord) -> tuple[TestOutcome, dict[str, Any]] | None:
        """Run the exact command on ``rec``'s patch; the outcome and its trace record."""
        try:
            applied = self.workbench.preview(rec.edits)
        except Exception as exc:  # it applied when it was executed; trouble now is data
            rec.gates.append(GateResult("verification", False, f"could not re-apply the patch: {exc}"))
            rec.submittable = False
            st.acc.rejected.add(rec.id)
            return None
        timeout = self.runs.timeout(st)
        verify = getattr(self.workbench, "verify", None)
        t0 = self.clock.monotonic()
        try:
            if callable(verify):
                outcome = verify(applied, timeout_s=timeout)
            else:
                outcome = self.workbench.run_tests(applied, select=None, timeout_s=timeout)
        except Exception as exc:  # a crash of the run is a failed verification, not of the loop
            outcome = crashed(exc)
        elapsed = self.clock.monotonic() - t0
        failing = sorted(outcome.failing)
        pre = [
            t for t in failing if proven_failing(t, st.base.failing) and not t.startswith(RUN_ERROR_PREFIX)
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

    def salvage(self, st: RunState) -> Scored | None:
        """No candidate passed every gate: the best one that fixed some targets and broke nothing,
        accepted as ``partial`` when its full run and the final verification fail only on tests
        that failed before the change."""
        if not st.base.targets:
            return None
        static = ("applies", "syntax", "policy", "size", "regressions", "verification", "quality")
        pool: list[tuple[int, Scored]] = []
        for s in st.search.scored:
            rec = s.record
            if rec.duplicate_of or s.outcome is None or s.outcome.timed_out:
                continue
            if any(not g.passed for g in rec.gates if g.gate in static):
                continue
            fixed = st.base.fixed_targets(s.outcome)
            if fixed and not st.base.new_failures(s.outcome):
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
                if not st.meter.can_execute():
                    return None
                try:
                    applied = self.workbench.preview(s.record.edits)
                except Exception:  # it applied before; trouble now means no salvage
                    continue
                full = self.runs.run_many(st, [(applied, self.config.regression_select)])[0]
            if not st.base.regression_gate(
                full, self.config.regression_select
            ).passed or not st.base.fixed_targets(full):
                continue
            verified = self.verify(st, s.record)
            if verified is None:
                continue
            outcome, data = verified
            pre, new = list(data["pre_existing"]), list(data["new_failures"])
            if data["passed_verification"] or not pre or new or outcome.timed_out:
                continue
            s.outcome = full
            st.acc.verification, st.acc.pre_existing = data, tuple(pre)
            return s
        return None


__all__ = ["Verifier"]
