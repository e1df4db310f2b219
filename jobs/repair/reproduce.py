"""Reproduce first: the base run, the targets, triage, and a designed reproduction test.

:class:`Reproduction` runs the suite on the base tree once. The targets are the task's target
tests, else every failure observed (narrowed to the ones CI named, when some of them fail here).
Nothing fails -> ``not_reproducible``. For an issue without a failing test, the Test Designer
writes a reproduction test and the Test Quality Checker keeps it only if it also fails on the
base code for a behavioural reason. Triage re-runs the targets; failures that do not repeat ->
``flaky``. No model spend on either verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from jobs.repair import roles
from jobs.repair.edits import EditError
from jobs.repair.known_good import establish
from jobs.repair.llm import LLMError
from jobs.repair.llm_guard import GuardedLLM
from jobs.repair.loop_config import LoopConfig
from jobs.repair.model import Edit, Evidence, Failure
from jobs.repair.ports import Clock
from jobs.repair.result import Verdict
from jobs.repair.state import RunState, fails, named_in, narrowing
from jobs.repair.testruns import TestRuns
from jobs.repair.workbench import Workbench

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
    "mocha": "javascript",
    "node": "javascript",
    "tap": "javascript",
    "vitest": "typescript",
    "maven": "java",
    "gradle": "java",
}


class Reproduction:
    """Reproduction and triage (see the module docstring). ``retrieve`` finds evidence for the
    Test Designer (empty without a retriever)."""

    def __init__(
        self,
        workbench: Workbench,
        config: LoopConfig,
        clock: Clock,
        runs: TestRuns,
        retrieve: Callable[[RunState], list[Evidence]],
    ) -> None:
        self.workbench = workbench
        self.config = config
        self.clock = clock
        self.runs = runs
        self.retrieve = retrieve

    def reproduce(self, st: RunState, guard: GuardedLLM | None) -> tuple[Verdict, str] | None:
        """Reproduce the failure on the base code: None when the targets are set (repair them),
        else the early verdict and its reason."""
        rep = st.trace.reproduction
        t0 = self.clock.monotonic()
        try:
            if not st.meter.can_execute():
                st.acc.stop = st.meter.execution_stop()
                rep.verdict, rep.reason = "not_run", f"no budget for the reproduction run ({st.acc.stop})"
                return "budget_exhausted", rep.reason
            baseline = self.runs.run(st, None, None)
            rep.baseline = baseline
            st.base.outcome = baseline
            st.base.failing = baseline.failing
            rep.timings["candidate_timeout_s"] = self.runs.timeout(st)
            # The per-test hang limits the workbench measured on this run (shared by every later run).
            limits = getattr(self.workbench, "hang_limits", None)
            if isinstance(limits, Mapping):
                for key in ("hung_s", "floor_s", "tests"):
                    if isinstance(limits.get(key), int | float) and limits.get(key):
                        rep.timings[f"candidate_hang_limit_{key}"] = float(limits[key])
            if baseline.environment:
                # Nothing of the code was tested: no triage, no candidates, no model call.
                rep.verdict, rep.reason = "environment", baseline.environment
                return "environment", baseline.environment
            task = st.task
            failing = (*baseline.failed, *baseline.errors)
            if task.targets:
                targets = tuple(t for t in task.targets if fails(baseline, t))
                if not targets:
                    rep.verdict = "not_reproducible"
                    rep.reason = "the target tests pass on the base code"
                    return "not_reproducible", rep.reason
            else:
                targets = tuple(dict.fromkeys(failing))
                seen_in_ci = tuple(t for t in targets if named_in(t, task.ci_tests))
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
            if targets and not st.base.synthesized and st.task.changes is not None:
                targets = self._known_good(st, targets, failing)
            flaky: tuple[str, ...] = ()
            if targets and not st.base.synthesized:
                targets, flaky = self._triage(st, targets)
                rep.flaky = list(flaky)
                if not targets:
                    rep.verdict = "flaky"
                    rep.reason = (
                        f"{len(flaky)} failing test{'s' if len(flaky) != 1 else ''} passed when re-run on the "
                        "unmodified code: flaky, not repaired"
                    )
                    return "flaky", rep.reason
            st.base.targets = targets
            st.base.passed = frozenset(baseline.passed) - set(flaky)
            st.base.errors = frozenset(baseline.errors)
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
            if not st.task.failures and not st.base.synthesized:
                st.task = replace(st.task, failures=tuple(failures[t] for t in targets if t in failures))
            if not st.base.tests_text:
                st.base.tests_text = self._tests_text(st)
            return None
        finally:
            rep.timings["total_s"] = self.clock.monotonic() - t0

    def _known_good(
        self, st: RunState, targets: tuple[str, ...], failing: tuple[str, ...]
    ) -> tuple[str, ...]:
        """With the change since green known: the failing tests that failed at the last green
        commit too are proven failing there (:mod:`jobs.repair.known_good`) and are not targets."""
        known = establish(st, self.workbench, self.runs, failing)
        if known is None or not known.failing:
            return targets
        kept = tuple(t for t in targets if not known.proves(t))
        left = len(targets) - len(kept)
        if not kept:
            st.trace.notices.append(
                f"every failing test fails at {known.source} as well: they stay the targets"
            )
            return targets
        if left:
            st.trace.notices.append(
                f"{left} failing test{'s' if left != 1 else ''} fail{'s' if left == 1 else ''} at "
                f"{known.source} as well: not {'a target' if left == 1 else 'targets'}"
            )
        return kept

    def _triage(self, st: RunState, targets: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Re-run the targets on the base code; a target that passes in any re-run is flaky."""
        rep = st.trace.reproduction
        if st.base.outcome is not None and st.base.outcome.timed_out:
            # Re-running a hang costs the timeout again and tells little: it is taken as reproduced.
            rep.reason = "the baseline run timed out: the hang is taken as reproduced without re-runs"
            return targets, ()
        history: dict[str, list[bool]] = {t: [] for t in targets}
        runs = st.meter.runs_allowed(self.config.triage_runs)
        if runs < self.config.triage_runs:
            rep.reason = "triage cut short by the budget"
        # The re-runs are independent: they run as one batch (concurrently when parallel > 1).
        for run in self.runs.run_many(st, [(None, narrowing(targets))] * runs):
            rep.reruns.append(run)
            for t in targets:
                history[t].append(fails(run, t))
        reproducible = tuple(t for t in targets if all(history[t]))
        flaky = tuple(t for t in targets if not all(history[t]))
        return reproducible, flaky

    def _design_test(self, st: RunState, guard: GuardedLLM | None) -> tuple[str, ...]:
        """Test Designer + Test Quality Checker: a reproduction test that fails on the base code."""
        if guard is None or not self.config.design_tests:
            return ()
        rep = st.trace.reproduction
        record: dict[str, Any] = {"verdict": "none"}
        rep.designed_test = record
        evidence = self.retrieve(st)
        framework = self.workbench.framework
        language = _LANGUAGE_OF_FRAMEWORK.get(framework, "python")
        try:
            designed = roles.design_test(
                guard, st.task, evidence, language=language, framework=framework or "pytest"
            )
        except LLMError as exc:
            record.update(error=str(exc))
            st.role_event(-1, "design_test", ok=False, error=str(exc))
            return ()
        st.role_event(-1, "design_test", ok=designed.ok, error=designed.error, usage=designed.usage)
        record.update(
            path=designed.path, content=designed.content, rationale=designed.rationale, error=designed.error
        )
        if not designed.ok:
            return ()
        try:
            verdict = roles.check_test(guard, st.task, designed.content)
        except LLMError as exc:
            record.update(verdict="unchecked", error=str(exc))
            st.role_event(-1, "check_test", ok=False, error=str(exc))
            return ()
        st.role_event(-1, "check_test", ok=verdict.accept, error=verdict.error, usage=verdict.usage)
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
        if not st.meter.can_execute():
            record["verdict"] = "not run (budget)"
            return ()
        run = self.runs.run(st, change, None)
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
        st.base.synthesized = True
        st.base.extra_edits = (edit,)
        st.base.tests_text = designed.content
        st.task = replace(st.task, failures=tuple(by_id[t] for t in behavioural if t in by_id))
        return tuple(behavioural)

    def _tests_text(self, st: RunState, limit: int = 30_000) -> str:
        """Source of the target tests' files (for the quality checker)."""
        source = self.workbench.source()
        paths = list(dict.fromkeys(t.split("::", 1)[0] for t in st.base.targets if "::" in t))
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


__all__ = ["Reproduction"]
