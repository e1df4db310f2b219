"""The verdict of a run: what it returns, and why in one line.

:func:`finish` turns the final :class:`~jobs.repair.state.RunState` into the
:class:`~jobs.repair.result.RepairResult` (and the trace's outcome): an early verdict of the
reproduction, an accepted (``fixed``/``partial``) or reverted candidate, a dead proposer, an
interrupt, or, when the search found nothing, the reason it did not (and a salvaged ``partial``).
"""

from __future__ import annotations

import re

from jobs.repair.result import RepairResult, Verdict
from jobs.repair.state import RunState, Scored
from jobs.repair.trace import CandidateRecord
from jobs.repair.verify import Verifier

BUDGET_DIMENSIONS = frozenset({"iterations", "tokens", "usd", "wall_s", "executions"})


def finish(st: RunState, verifier: Verifier, early: tuple[Verdict, str] | None = None) -> RepairResult:
    """The result of the run ``st`` (``early``: a verdict and reason decided before the search);
    ``verifier`` salvages a partial fix when the search accepted nothing."""
    trace = st.trace
    verdict: Verdict
    out = trace.outcome
    returned: Scored | None = None
    if early is not None:
        verdict, reason = early
    elif st.acc.accepted is not None and st.acc.pre_existing:
        verdict, returned = "partial", st.acc.accepted
        reason = _partial_reason(st, returned, len(set(st.base.targets)))
    elif st.acc.accepted is not None:
        verdict, returned = "fixed", st.acc.accepted
        command = st.acc.verification.get("command", "the test command")
        reason = (
            f"{returned.record.id} passed every gate ({returned.record.tests_passed} tests pass) "
            f"and `{command}` exited 0 on the patched tree"
        )
    elif st.acc.reverted is not None:
        verdict, returned = "reverted", st.acc.reverted
        reason = (
            f"the code quality checker rejected the candidates ({st.acc.quality_reason or 'rejected'}); "
            f"reverted to the best verified candidate {returned.record.id}, which needs human review"
        )
    elif st.acc.proposer_dead:
        verdict, reason = "proposer_failed", f"the proposer cannot continue: {st.acc.proposer_dead}"
    elif st.acc.interrupted:
        verdict, reason = "interrupted", st.acc.interrupted
    else:
        verdict, reason = _unfixed(st)
        salvaged = verifier.salvage(st) if verdict != "reverted" else None
        if salvaged is not None:
            verdict, returned = "partial", salvaged
            fixed = len(st.base.fixed_targets(salvaged.outcome)) if salvaged.outcome is not None else 0
            reason = _partial_reason(st, salvaged, fixed)
    out.verdict, out.reason = verdict, reason
    out.verification = dict(st.acc.verification) if returned is not None else {}
    out.pre_existing = list(st.acc.pre_existing) if verdict == "partial" else []
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
    trace.spend = st.meter.spend()
    trace.usage = st.meter.usage
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
        usage=st.meter.usage,
        spend=trace.spend,
        budget=st.meter.budget,
        notices=tuple(trace.notices),
        trace=trace,
        stopped_by="" if returned is not None else st.acc.stop,
        verification=dict(out.verification),
        pre_existing=tuple(out.pre_existing),
    )


def _partial_reason(st: RunState, returned: Scored, fixed: int) -> str:
    n = len(set(st.base.targets))
    pre = list(st.acc.pre_existing)
    command = st.acc.verification.get("command", "the test command")
    listed = ", ".join(pre[:5]) + (f" and {len(pre) - 5} more" if len(pre) > 5 else "")
    head = (
        f"{returned.record.id} makes the {n} target test{'s' if n != 1 else ''} pass"
        if fixed >= n
        else f"{returned.record.id} fixes {fixed} of {n} target tests"
    )
    return (
        f"{head}, but `{command}` still fails (exit {st.acc.verification.get('exit_code', '?')}), only on "
        f"{len(pre)} test{'s' if len(pre) != 1 else ''} that already failed before the change: {listed}"
    )


def _unfixed(st: RunState) -> tuple[Verdict, str]:
    executed = [s for s in st.search.scored if not s.record.duplicate_of]
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
    best = (
        f"; best candidate passed {st.search.best.tests_passed} tests" if st.search.best is not None else ""
    )
    if st.acc.stop in BUDGET_DIMENSIONS:
        spent = getattr(st.meter.spend(), st.acc.stop)
        limit = getattr(st.meter.budget, st.acc.stop)
        return "budget_exhausted", f"budget exhausted: {st.acc.stop} ({_num(spent)} of {_num(limit)}){best}"
    if not executed:
        return "no_candidates", _why_no_candidates(st)
    if st.acc.stop == "hangs" and st.acc.hang_stop:
        n = len(executed)
        return "budget_exhausted", (
            f"search stopped after {n} candidate{'s' if n != 1 else ''}: {st.acc.hang_stop}{best}"
        )
    if st.acc.stop == "candidates":
        return "no_candidates", f"no further candidates to try after {len(executed)}{best}"
    n = len(st.trace.rounds)
    return "budget_exhausted", f"no candidate passed every gate in {n} round{'s' if n != 1 else ''}{best}"


def _why_no_candidates(st: RunState) -> str:
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
    listed = "; ".join(f"{why}" + (f" ({k})" if k > 1 and len(ranked) > 1 else "") for why, k in ranked[:3])
    if not any(_applied(c) for c in cands if not c.duplicate_of):
        return f"{head}, none applied: {listed}"
    return f"{head}, none ran: {listed}"


def _num(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}" if value % 1 else str(int(value))
    return str(value)


def _applied(c: CandidateRecord) -> bool:
    gate = c.gate("applies")
    return gate is not None and gate.passed


def _short_reason(text: str, limit: int = 160) -> str:
    """The first line of ``text``, without the edit index prefix, cut to ``limit``."""
    line = (text.strip().splitlines() or [""])[0]
    line = re.sub(r"^edit #\d+ \([^)]*\): ", "", line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


__all__ = ["BUDGET_DIMENSIONS", "finish"]
