"""The known-good baseline: which of today's failing tests failed at the last green commit too.

``partial`` means the targets pass and the command fails only on tests *proven* failing at a
known-good baseline (:mod:`jobs.repair.judge`). With the change since the last green commit known
(``task.changes``: ``arcs fix --since``, or the App's last green run), :func:`establish` rebuilds
that commit's tree as edits on the base tree (the whole change undone:
:func:`~jobs.repair.tier0.reverts.undo_change`) and runs the tests that fail now on it, once, in
the sandbox, narrowed to them. Those that fail there as well are not the change's doing: they are
recorded as proven, and they are not targets (a candidate cannot be asked to fix what was already
broken when CI was green). Without a change signal nothing runs and every failing test stays a
target, so ``partial`` cannot happen.

One sandboxed execution, counted on the meter; none without a change, without failing tests, or
without budget for it beside a candidate run.
"""

from __future__ import annotations

from collections.abc import Sequence

from jobs.repair.edits import EditError
from jobs.repair.judge import KnownGood
from jobs.repair.state import RunState, fails, narrowing
from jobs.repair.testruns import TestRuns
from jobs.repair.tier0.reverts import undo_change
from jobs.repair.workbench import RUN_ERROR_PREFIX, Workbench


def establish(st: RunState, workbench: Workbench, runs: TestRuns, failing: Sequence[str]) -> KnownGood | None:
    """Run ``failing`` (the tests failing on the base tree) on the last green commit's tree and
    record the result in ``st.base.known_good`` and the trace (see the module docstring). None when
    there is no change signal, nothing to check, or it could not run (a note says why)."""
    changes = st.task.changes
    tests = [t for t in dict.fromkeys(failing) if t and not t.startswith(RUN_ERROR_PREFIX)]
    if changes is None or not tests:
        return None
    rep = st.trace.reproduction
    source = workbench.source()
    edits = undo_change(changes, source.read)
    if edits is None:
        st.trace.notices.append(
            f"the last green commit {changes.base[:7]} could not be rebuilt from the change since it: "
            "every failing test is a target"
        )
        return None
    if st.meter.runs_allowed(2) < 2:
        st.trace.notices.append(
            f"no budget to run the failing tests on the last green commit {changes.base[:7]}: "
            "every failing test is a target"
        )
        return None
    try:
        applied = workbench.preview(edits)
    except (EditError, OSError, ValueError) as exc:
        st.trace.notices.append(f"the last green commit {changes.base[:7]} could not be rebuilt: {exc}")
        return None
    outcome = runs.run(st, applied, narrowing(tests))
    if outcome.environment or (outcome.timed_out and not outcome.ran):
        st.trace.notices.append(
            f"the failing tests could not run on the last green commit {changes.base[:7]}"
            f" ({outcome.environment or 'timed out'}): every failing test is a target"
        )
        return None
    ran = set(outcome.ran) | set(outcome.errors)
    checked = frozenset(t for t in tests if t in ran or any(r.startswith(t) for r in ran))
    proven = frozenset(t for t in checked if fails(outcome, t))
    known = KnownGood(source=f"the last green commit {changes.base[:7]}", failing=proven, checked=checked)
    st.base.known_good = known
    rep.known_good = known.to_json()
    rep.timings["known_good_s"] = outcome.duration_s
    return known


__all__ = ["establish"]
