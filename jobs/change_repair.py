"""Change-aware repair in the engine: tier 0's first offers (formatter autofix, reverts of the
change since the last green run) around the proposer a plan uses, and the lines they add to the trace.

:func:`jobs.build.build` calls :func:`change_aware` once it has the runner and the workbench (with
several commits since green it sets up a bisection to the culprit, in that workbench, before the
reverts are ranked: :func:`_early_bisect`); the :class:`ChangeFirst` it returns says what the
wrapper reserves and found, and :meth:`ChangeFirst.notices` gives the trace lines after the loop. Autofix runs through :class:`jobs.command_bench.SandboxCommandBench` on the same
runner and the repository's own environment (toolchains, ``.arcs.yml`` ``setup``); at most
:data:`AUTOFIX_RUNS` sandboxed runs, besides the loop's own verification of the offer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import structlog

from jobs.command_bench import SandboxCommandBench
from jobs.culprit import BISECT_MAX_RUNS, EarlyBisect
from jobs.history import Files, reverted
from jobs.repair.bisect import BisectResult
from jobs.repair.changes import ChangeSet
from jobs.repair.loop import RepairResult
from jobs.repair.ports import Proposer
from jobs.repair.tier0.change_aware import ChangeAwareProposer
from jobs.repair.tier0.formatters import autofix_plan
from jobs.sandbox_workbench import SandboxWorkbench
from runners.base import Runner

log = structlog.get_logger("arcs.change_repair")

AUTOFIX_RUNS = 4
MIN_LOOP_RUNS = 4
"""Executions the loop keeps, at least, when runs are reserved for a bisection before it
(the base run, a triage re-run, one candidate, its final verification)."""


@dataclass(frozen=True, slots=True)
class ChangeFirst:
    """Tier 0's first offers around a proposer, as values the wiring reads (no probing of the
    proposer): the wrapper, the autofix bench and the early bisection, each None when absent."""

    proposer: Proposer
    """What the loop asks: :attr:`aware` when there is something to offer first, else the inner proposer."""
    aware: ChangeAwareProposer | None = None
    bench: SandboxCommandBench | None = None
    early: EarlyBisect | None = None

    @property
    def reserve(self) -> int:
        """Executions the change-first runs may draw (the search's window is the rest): the
        autofix's runs when it has a bench, and the early bisection's reserve."""
        autofix = self.aware.autofix_runs if self.aware is not None and self.bench is not None else 0
        return autofix + (self.early.reserve if self.early is not None else 0)

    @property
    def early_found(self) -> BisectResult | None:
        """The bisection made before the reverts, for :func:`jobs.culprit.after_loop` (None: none)."""
        return self.early.found if self.early is not None else None

    def notices(self, result: RepairResult, changes: ChangeSet | None) -> list[str]:
        """Trace lines: what changed since green, what autofix did, and which commit a winning revert undoes."""
        lines: list[str] = []
        if changes is not None:
            lines.append(
                f"changes since the last green commit {changes.base[:7]}: {len(changes.commits)} commit(s), "
                f"{len(changes.files)} file(s)" + (" (truncated)" if changes.truncated else "")
            )
        aware = self.aware
        if aware is None:
            return lines
        done = aware.autofix_result
        if done is not None:
            files = len(done.change.paths) if done.change is not None else 0
            lines.append(
                f"autofix (no LLM) with {', '.join(done.tools) or 'no known tool'} on {files} file(s): "
                f"{done.reason} ({done.runs} run(s))"
            )
        if result.fixed and changes is not None:
            revert = aware.revert_of(result.edits)
            if revert is not None:
                named = changes.introduced_by(revert.sha) if revert.sha else ""
                lines.append(f"the fix undoes {revert.label}" + (f"; {named}" if named else ""))
        return lines


def change_aware(
    inner: Proposer,
    *,
    check: str,
    changes: ChangeSet | None,
    repo: Path,
    runner: Runner,
    workbench: SandboxWorkbench,
    count: Callable[[int], None],
    memory_mb: int = 2048,
    env: Mapping[str, str] | None = None,
    setup: str | None = None,
    timeout_s: float = 300.0,
    max_runs: int = AUTOFIX_RUNS,
) -> ChangeFirst:
    """``inner`` behind a :class:`ChangeAwareProposer` when there is something to offer first
    (``check`` is a formatter/linter check with a fix mode, or the change since green is known).
    Autofix makes at most ``max_runs`` (and :data:`AUTOFIX_RUNS`) runs; none when it is 0. The
    early bisection runs in ``workbench`` (the repair's own); every run of either is charged with
    ``count`` (the repair's meter) before it starts."""
    runs = min(AUTOFIX_RUNS, max(0, max_runs))
    bench = (
        SandboxCommandBench(repo, runner, memory_mb=memory_mb, env=env, setup=setup, count=count)
        if runs > 0 and autofix_plan(check) is not None
        else None
    )
    if bench is None and changes is None:
        return ChangeFirst(inner)

    def revert_tree(sha: str) -> Files | None:
        try:
            return reverted(repo, sha, three_way=True)
        except Exception as exc:  # git trouble: no such candidate
            log.warning("repair.revert_tree_failed", sha=sha[:12], error=str(exc)[:200])
            return None

    proposer = ChangeAwareProposer(
        inner,
        check=check,
        bench=bench,
        changes=changes,
        autofix_runs=max(runs, 1),
        timeout_s=timeout_s,
        revert_tree=revert_tree if changes is not None else None,
    )
    early = None
    if changes is not None:
        # ``max_runs`` is half the plan's executions (jobs.build), so the engine and ``arcs
        # replay`` reserve the same runs for the early bisection.
        early = _early_bisect(
            bench,
            changes,
            repo,
            executions=2 * max(0, max_runs),
            reserved=runs if bench is not None else 0,
            timeout_s=timeout_s,
            workbench=workbench,
            count=count,
        )
        proposer.find_culprit = early
    return ChangeFirst(proposer, proposer, bench, early)


def _early_bisect(
    bench: SandboxCommandBench | None,
    changes: ChangeSet,
    repo: Path,
    *,
    executions: int,
    reserved: int,
    timeout_s: float,
    workbench: SandboxWorkbench,
    count: Callable[[int], None],
) -> EarlyBisect | None:
    """The bisection before the reverts (the culprit's first), when the change has several commits
    and ``executions`` hold ``ceil(log2 n)`` runs besides the ``reserved`` ones (autofix) and
    :data:`MIN_LOOP_RUNS` for the loop; the autofix reserve is shared (what autofix leaves unused
    goes to the bisection). None: no early bisection (the culprit is looked for after the loop)."""
    n = len(changes.commits)
    if n < 2:
        return None
    need = min(BISECT_MAX_RUNS, math.ceil(math.log2(n)))
    extra = max(0, min(need, executions - reserved - MIN_LOOP_RUNS))
    if reserved + extra < need:
        return None
    total = reserved + extra
    return EarlyBisect(
        changes,
        repo,
        workbench,
        timeout_s=timeout_s,
        budget=lambda: total - (bench.runs if bench is not None else 0),
        need=need,
        count=count,
        reserve=extra,
    )


__all__ = ["AUTOFIX_RUNS", "MIN_LOOP_RUNS", "ChangeFirst", "change_aware"]
