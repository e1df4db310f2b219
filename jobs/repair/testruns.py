"""Test runs of the loop: counted, timed out, measured.

:class:`TestRuns` owns how the loop executes the suite through the
:class:`~jobs.repair.workbench.Workbench`: every run is counted on the
:class:`~jobs.repair.meter.BudgetMeter` before it starts; its timeout is the configured one for
the reproduction run and afterwards a multiple of the measured duration (the longest completed
run is the reference), the hang probe while nothing has completed, never more than the wall
budget left; a batch runs ``parallel`` at a time; a workbench crash is an observed failure of
the run, not of the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from jobs.repair.edits import AppliedEdits
from jobs.repair.loop_config import LoopConfig
from jobs.repair.model import Failure
from jobs.repair.state import RunState
from jobs.repair.workbench import TestOutcome, Workbench

Job = tuple[AppliedEdits | None, Sequence[str] | None]
"""One test run: the change (None: the base tree) and the ids to select (None: the whole suite)."""


def crashed(exc: Exception) -> TestOutcome:
    """The outcome of a run that raised instead of reporting."""
    return TestOutcome(
        errors=("<run>",),
        failures=(Failure("<run>", type=type(exc).__name__, message=str(exc)),),
        exit_code=-1,
    )


class TestRuns:
    """Runs the suite for the loop (see the module docstring)."""

    __test__ = False  # not a pytest class

    def __init__(self, workbench: Workbench, config: LoopConfig) -> None:
        self.workbench = workbench
        self.config = config

    def run(self, st: RunState, change: AppliedEdits | None, select: Sequence[str] | None) -> TestOutcome:
        """One run."""
        return self.run_many(st, [(change, select)])[0]

    def run_many(self, st: RunState, jobs: Sequence[Job]) -> list[TestOutcome]:
        """Run ``jobs`` (each one execution, counted before it starts), ``parallel`` at a time;
        results in job order."""
        if not jobs:
            return []
        timeout = self.timeout(st)
        st.meter.count_runs(len(jobs))

        def one(job: Job) -> TestOutcome:
            change, select = job
            try:
                return self.workbench.run_tests(change, select=select, timeout_s=timeout)
            except Exception as exc:  # a workbench crash is an observed failure of the run, not of the loop
                return crashed(exc)

        workers = min(self.config.parallel, len(jobs))
        if workers <= 1:
            results = [one(job) for job in jobs]
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="arcs-run") as pool:
                results = list(pool.map(one, jobs))
        self.measured(st, results)
        return results

    def timeout(self, st: RunState) -> float:
        """The timeout of the next run: the configured one for the reproduction run; afterwards a
        multiple of the measured duration (floor, configured cap) — after a baseline the hang probe
        stopped, of the part that did not hang — or the hang probe while nothing has completed.
        Never more than the wall budget left."""
        cfg = self.config
        cap = cfg.test_timeout_s
        reference = st.base.reference_s
        base = st.base.outcome
        if reference is None and base is not None and base.timed_out and base.hang_s > 0:
            # The hang probe stopped one test: the rest of the baseline is a measured duration.
            reference = max(base.duration_s - base.hang_s, 0.0)
        if base is not None:
            if reference is None:
                cap = min(cap, max(cfg.timeout_floor_s, cfg.hang_probe_s))
            else:
                cap = min(cap, max(cfg.timeout_floor_s, cfg.timeout_factor * reference))
        left = st.meter.wall_left() - cfg.min_wall_s
        return max(cfg.min_wall_s, min(cap, left))

    @staticmethod
    def measured(st: RunState, results: Sequence[TestOutcome]) -> None:
        """Runs that completed tell how long a run takes (the longest one counts)."""
        done = [r.duration_s for r in results if not r.timed_out]
        if done:
            ref = st.base.reference_s
            st.base.reference_s = max(done) if ref is None else max(ref, max(done))


__all__ = ["Job", "TestRuns", "crashed"]
