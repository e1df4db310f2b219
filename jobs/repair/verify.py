"""Acceptance: the final verification of a selected candidate, and a last look at the unverified.

:class:`Verifier` runs the exact test command on the patched tree (a fresh copy) before any
candidate is returned, and :func:`judged` applies the README's definitions
(:func:`jobs.repair.judge.decide`): exit 0 accepts it (``fixed``); every target passing and the
command failing only on tests proven failing at the known-good baseline accepts it as ``partial``;
anything else gives it a failed ``verification`` gate and takes it out of the pool. When no
candidate was accepted, :meth:`Verifier.salvage` verifies the best one or two that made every
target pass but were never verified (their regression run was cut short). A candidate that fixes
only some targets is never accepted: the report names it as the best one instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobs.repair.judge import Verdict, decide, rank_key
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
        in a fresh copy, judged by :func:`jobs.repair.judge.decide`. Exit 0 -> accepted
        (``fixed``). Every target passing and the rest failing only on tests proven failing at the
        known-good baseline -> accepted as ``partial``. Anything else -> the candidate gets a failed
        ``verification`` gate, leaves the pool, and the search goes on."""
        rec = chosen.record
        verified = self.verify(st, rec)
        if verified is None:
            return False
        outcome, data = verified
        command = str(data["command"])
        verdict = judged(st, outcome, data)
        if verdict.decision == "fixed":
            rec.gates.append(
                GateResult("verification", True, f"`{command}` exited 0 on the patched tree", data)
            )
            st.acc.accepted, st.acc.verification = chosen, data
            return True
        if verdict.decision == "partial":
            pre = list(verdict.pre_existing)
            known = st.base.known_good.source if st.base.known_good is not None else "the known-good baseline"
            detail = (
                f"`{command}` still fails (exit {outcome.exit_code}), only on tests that fail at {known} "
                f"as well: {', '.join(pre[:5])}" + (" ..." if len(pre) > 5 else "")
            )
            data["pre_existing"] = pre
            rec.gates.append(GateResult("verification", False, detail, data))
            st.acc.accepted, st.acc.verification, st.acc.pre_existing = chosen, data, tuple(pre)
            return True
        new = list(data["new_failures"])
        after = ""
        if outcome.timed_out:
            why = "timed out"
        elif verdict.failing_targets:
            why = f"fails on target {', '.join(verdict.failing_targets[:5])}" + (
                " ..." if len(verdict.failing_targets) > 5 else ""
            )
        elif new:
            why = f"fails on {', '.join(new[:5])}" + (" ..." if len(new) > 5 else "")
        elif verdict.unproven:
            n = len(verdict.unproven)
            why = f"still fails on {', '.join(verdict.unproven[:5])}" + (" ..." if n > 5 else "")
            after = (
                ", not proven failing before the change: no known-good baseline (`--since` names the last "
                "green commit)"
                if st.base.known_good is None
                else f", which {'does' if n == 1 else 'do'} not fail at {st.base.known_good.source}"
            )
        else:
            why = f"exited {outcome.exit_code}" + (
                f": {outcome.failures[0].message.splitlines()[0]}"
                if outcome.failures and outcome.failures[0].message
                else ""
            )
        data["unproven"] = list(verdict.unproven)
        detail = f"`{command}` {why} on the patched tree{after}"
        rec.gates.append(GateResult("verification", False, detail, data))
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
        """No candidate was accepted: the best (at most two) that made every target pass, failed
        no gate and was never verified (its regression run was cut by the budget or a halt) get
        the final verification; the first that :meth:`accept` takes is returned."""
        if not st.base.targets:
            return None
        failed_gates = ("applies", "syntax", "policy", "size", "regressions", "verification", "quality")
        pool = []
        for s in st.search.scored:
            standing = st.base.standing(s)
            if standing is None or not standing.all_targets or standing.timed_out or standing.new_failures:
                continue
            if s.record.id in st.acc.rejected or s.record.gate("verification") is not None:
                continue
            if any(not g.passed for g in s.record.gates if g.gate in failed_gates):
                continue
            pool.append((rank_key(standing), s))
        pool.sort(key=lambda item: item[0])
        for _, s in pool[:2]:
            if self.accept(st, s):
                return s
        return None


def judged(st: RunState, outcome: TestOutcome, data: Mapping[str, Any]) -> Verdict:
    """:func:`jobs.repair.judge.decide` on a final run ``outcome`` (its record ``data``): a run that
    timed out or could not run the tests is never ``partial``."""
    exit_ok = bool(data.get("passed_verification"))
    if not exit_ok and (outcome.timed_out or outcome.environment):
        return Verdict("not_fixed", failing_targets=tuple(st.base.targets))
    return decide(
        exit_ok=exit_ok,
        targets=st.base.targets,
        passing_targets=st.base.fixed_targets(outcome),
        failing=outcome.failing,
        known_good=st.base.known_good,
    )


__all__ = ["Verifier", "judged"]
