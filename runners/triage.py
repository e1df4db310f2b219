"""Flakiness triage: does a failure reproduce on the unmodified code?

:func:`triage` re-runs the failing tests ``runs`` times (default 3), each time in a fresh copy of
the base commit's tree, selecting only those tests when the framework can (pytest node ids,
``go test -run``, cargo test names, jest/vitest ``-t``, ``-Dtest=``). A test that fails in some
runs and passes in others is *flaky*: ARCS does not try to repair it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from runners.base import Runner
from runners.commands import ResolvedCommand
from runners.execute import WorkspaceFactory, run_tests
from runners.results import TestRun

Verdict = Literal["reproducible", "flaky", "passes"]
RunOutcome = Literal["passed", "failed"]


@dataclass(frozen=True, slots=True)
class TriageVerdict:
    """The verdict over all failing tests, and per test."""

    verdict: Verdict
    """``reproducible`` when some test fails in every run (those are worth repairing); else
    ``flaky`` when some test passed in some runs; else ``passes`` (nothing failed again)."""
    runs: int
    reproducible: tuple[str, ...] = ()
    flaky: tuple[str, ...] = ()
    passing: tuple[str, ...] = ()
    outcomes: Mapping[str, tuple[RunOutcome, ...]] = field(default_factory=dict)
    selected: bool = False
    """True when only the failing tests were run (the framework supports selection)."""
    command: str = ""
    reason: str = ""

    @property
    def repairable(self) -> bool:
        """Only a reproducible failure is worth a repair attempt."""
        return self.verdict == "reproducible"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "verdict": self.verdict,
            "repairable": self.repairable,
            "runs": self.runs,
            "reproducible": list(self.reproducible),
            "flaky": list(self.flaky),
            "passing": list(self.passing),
            "outcomes": {k: list(v) for k, v in self.outcomes.items()},
            "selected": self.selected,
            "command": self.command,
            "reason": self.reason,
        }


def _outcome(run: TestRun, test_id: str) -> RunOutcome:
    oc = run.outcome_of(test_id)
    if oc in ("failed", "error"):
        return "failed"
    if oc in ("passed", "skipped"):
        return "passed"
    # Not reported: a run that failed as a whole (build error, crash, kill) counts as a failure;
    # a clean exit means the failure is gone.
    return "passed" if run.ok else "failed"


def triage(
    runner: Runner,
    workspace_src: Path,
    command: ResolvedCommand,
    failing_ids: Iterable[str],
    *,
    runs: int = 3,
    timeout_s: float = 600.0,
    memory_mb: int = 2048,
    workspace: WorkspaceFactory | None = None,
) -> TriageVerdict:
    """Re-run ``failing_ids`` ``runs`` times on the unmodified tree at ``workspace_src``.

    Each run gets a fresh ephemeral copy of ``workspace_src`` (``workspace`` overrides how it is
    made). If selecting the tests finds none of them (an id the framework does not accept), the
    whole command is run instead.
    """
    if runs < 1:
        raise ValueError("runs must be at least 1")
    ids = list(dict.fromkeys(failing_ids))
    if not ids:
        return TriageVerdict(
            verdict="passes", runs=0, command=command.command, reason="no failing tests to triage"
        )
    selected = command.selecting(ids)
    to_run = selected or command
    history: dict[str, list[RunOutcome]] = {i: [] for i in ids}
    done = 0
    while done < runs:
        run = run_tests(
            runner, workspace_src, to_run, timeout_s=timeout_s, memory_mb=memory_mb, workspace=workspace
        )
        if done == 0 and to_run is selected and not any(run.outcome_of(i) is not None for i in ids):
            # The narrowed command matched none of the tests: fall back to the full command.
            to_run = command
            continue
        for i in ids:
            history[i].append(_outcome(run, i))
        done += 1
    reproducible = tuple(i for i in ids if all(o == "failed" for o in history[i]))
    passing = tuple(i for i in ids if all(o == "passed" for o in history[i]))
    flaky = tuple(i for i in ids if i not in reproducible and i not in passing)
    verdict: Verdict
    if reproducible:
        verdict = "reproducible"
        reason = f"{len(reproducible)} of {len(ids)} failing tests failed in all {runs} runs"
        if flaky:
            reason += f"; {len(flaky)} flaky (left out of the repair)"
    elif flaky:
        verdict = "flaky"
        reason = f"{len(flaky)} failing tests passed in some of {runs} runs on the unmodified code: flaky, not repaired"
    else:
        verdict = "passes"
        reason = f"none of the {len(ids)} failing tests failed again in {runs} runs on the unmodified code"
    return TriageVerdict(
        verdict=verdict,
        runs=runs,
        reproducible=reproducible,
        flaky=flaky,
        passing=passing,
        outcomes={i: tuple(v) for i, v in history.items()},
        selected=to_run is selected and selected is not None,
        command=to_run.command,
        reason=reason,
    )
