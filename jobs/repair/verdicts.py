"""The verdict of a run: what it returns, and why in one line.

:func:`finish` turns the final :class:`~jobs.repair.state.RunState` into the
:class:`~jobs.repair.result.RepairResult` (and the trace's outcome): an early verdict of the
reproduction, an accepted (``fixed``/``partial``, :mod:`jobs.repair.judge`) or reverted candidate,
a dead proposer, an interrupt, or, when the search found nothing, the reason it did not and the
best candidate ("best: k of n targets", kept in the trace and never returned as the patch).
"""

from __future__ import annotations

import re
from dataclasses import replace

from jobs.repair.behaviour import BehaviourProbe, behaviour_line
from jobs.repair.judge import BestCandidate, best_of
from jobs.repair.result import RepairResult, Verdict
from jobs.repair.state import RunState, Scored
from jobs.repair.trace import CandidateRecord
from jobs.repair.verify import Verifier

BUDGET_DIMENSIONS = frozenset({"iterations", "tokens", "usd", "wall_s", "executions"})


def finish(
    st: RunState,
    verifier: Verifier,
    early: tuple[Verdict, str] | None = None,
    probe: BehaviourProbe | None = None,
) -> RepairResult:
    """The result of the run ``st`` (``early``: a verdict and reason decided before the search);
    ``verifier`` gets a last look at unverified candidates that made every target pass when the
    search accepted nothing. Not fixed: the best candidate is named ("best: k of n targets") and
    kept in the trace, never returned as the patch. ``probe`` (optional) compares the returned or
    best candidate's changed functions with the originals (:mod:`jobs.repair.behaviour`)."""
    trace = st.trace
    verdict: Verdict
    out = trace.outcome
    returned: Scored | None = None
    if early is not None:
        verdict, reason = early
    else:
        if (
            st.acc.accepted is None
            and st.acc.reverted is None
            and not st.acc.proposer_dead
            and not st.acc.interrupted
        ):
            verifier.salvage(st)
        verdict, reason, returned = _settled(st)
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
        if probe is not None and verdict in ("fixed", "partial"):
            out.behaviour = probe.check(st, rec)
            if line := behaviour_line(out.behaviour):
                out.reason = reason = f"{reason}; {line}"
    elif early is None:
        best = _best(st, probe)
        if best is not None:
            out.best = best.to_json()
            out.reason = reason = f"{reason}; {best.standing.line()}" + (
                f"; {line}" if (line := behaviour_line(best.behaviour)) else ""
            )
    spend = st.meter.spend()
    if st.owns_meter:  # else the repair that opened the window writes the whole spend
        trace.spend = spend
    trace.usage = st.meter.usage
    trace.timings["total_s"] = spend.wall_s
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
        spend=spend,
        budget=trace.budget,
        notices=tuple(trace.notices),
        trace=trace,
        stopped_by="" if returned is not None else st.acc.stop,
        verification=dict(out.verification),
        pre_existing=tuple(out.pre_existing),
        best=dict(out.best),
    )


def _settled(st: RunState) -> tuple[Verdict, str, Scored | None]:
    """The verdict, its reason and the returned candidate once the search is over."""
    if st.acc.accepted is not None and st.acc.pre_existing:
        return "partial", _partial_reason(st, st.acc.accepted), st.acc.accepted
    if st.acc.accepted is not None:
        returned = st.acc.accepted
        command = st.acc.verification.get("command", "the test command")
        return (
            "fixed",
            (
                f"{returned.record.id} passed every gate ({returned.record.tests_passed} tests pass) "
                f"and `{command}` exited 0 on the patched tree"
            ),
            returned,
        )
    if st.acc.reverted is not None:
        return (
            "reverted",
            (
                f"the code quality checker rejected the candidates ({st.acc.quality_reason or 'rejected'}); "
                f"reverted to the best verified candidate {st.acc.reverted.record.id}, which needs human review"
            ),
            st.acc.reverted,
        )
    if st.acc.proposer_dead:
        return "proposer_failed", f"the proposer cannot continue: {st.acc.proposer_dead}", None
    if st.acc.interrupted:
        return "interrupted", st.acc.interrupted, None
    verdict, reason = _unfixed(st)
    return verdict, reason, None


def _best(st: RunState, probe: BehaviourProbe | None) -> BestCandidate | None:
    """The best executed candidate that fixes at least one target (:func:`jobs.repair.judge.best_of`)."""
    standings = {}
    for s in st.search.scored:
        standing = st.base.standing(s)
        if standing is not None:
            standings[standing.candidate] = (standing, s)
    best = best_of(s for s, _ in standings.values())
    if best is None:
        return None
    rec = standings[best.candidate][1].record
    behaviour = probe.check(st, rec) if probe is not None else {}
    if behaviour:
        best = replace(best, behaviour_changes=int(behaviour.get("unchecked_changes") or 0))
    return BestCandidate(best, patch=rec.diff, explanation=rec.explanation, behaviour=behaviour)


def _partial_reason(st: RunState, returned: Scored) -> str:
    n = len(set(st.base.targets))
    pre = list(st.acc.pre_existing)
    command = st.acc.verification.get("command", "the test command")
    listed = ", ".join(pre[:5]) + (f" and {len(pre) - 5} more" if len(pre) > 5 else "")
    known = st.base.known_good.source if st.base.known_good is not None else "the known-good baseline"
    return (
        f"{returned.record.id} makes the {n} target test{'s' if n != 1 else ''} pass, but `{command}` still "
        f"fails (exit {st.acc.verification.get('exit_code', '?')}), only on {len(pre)} "
        f"test{'s' if len(pre) != 1 else ''} that fail{'s' if len(pre) == 1 else ''} at {known} as well: {listed}"
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
        why = _verification_detail(fixed_targets)
        return "gates_rejected", (
            f"{n} candidate{'s' if n != 1 else ''} fixed the target tests but "
            f"{'were' if n != 1 else 'was'} rejected by: {', '.join(names) or 'the budget'}"
            + (f" ({why})" if why else "")
        )
    best = ""  # the best candidate is named by `finish` ("best: k of n targets")
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


def _verification_detail(rejected: list[Scored]) -> str:
    """The first failed final verification's detail (without the command), '' when none."""
    for s in rejected:
        gate = s.record.gate("verification")
        if gate is not None and not gate.passed and gate.detail:
            return _short_reason(re.sub(r"^`[^`]*` ", "", gate.detail), 240)
    return ""


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
