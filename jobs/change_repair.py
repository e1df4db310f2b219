"""Change-aware repair in the engine: tier 0's first offers (formatter autofix, reverts of the
change since the last green run) around the proposer a plan uses, and the lines they add to the trace.

The engine calls :func:`change_aware` once it has the runner (with several commits since green it
sets up a bisection to the culprit before the reverts are ranked: :func:`_early_bisect`),
:func:`bind_workbench` once it has the workbench the bisection runs in, and
:func:`change_notices` after the loop. Autofix runs through :class:`jobs.command_bench.SandboxCommandBench` on the same
runner and the repository's own environment (toolchains, ``.arcs.yml`` ``setup``); at most
:data:`AUTOFIX_RUNS` sandboxed runs, besides the loop's own verification of the offer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
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


def change_aware(
    inner: Proposer,
    *,
    check: str,
    changes: ChangeSet | None,
    repo: Path,
    runner: Runner,
    memory_mb: int = 2048,
    env: Mapping[str, str] | None = None,
    setup: str | None = None,
    timeout_s: float = 300.0,
    max_runs: int = AUTOFIX_RUNS,
) -> Proposer:
    """``inner`` behind a :class:`ChangeAwareProposer` when there is something to offer first
    (``check`` is a formatter/linter check with a fix mode, or the change since green is known).
    Autofix makes at most ``max_runs`` (and :data:`AUTOFIX_RUNS`) runs; none when it is 0."""
    runs = min(AUTOFIX_RUNS, max(0, max_runs))
    bench = (
        SandboxCommandBench(repo, runner, memory_mb=memory_mb, env=env, setup=setup)
        if runs > 0 and autofix_plan(check) is not None
        else None
    )
    if bench is None and changes is None:
        return inner

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

    def open_workbench() -> SandboxWorkbench:
        from jobs.config import load_repo_config
        from runners.commands import resolve_test_command

        resolved = resolve_test_command(repo, explicit=check, config=load_repo_config(repo))
        return SandboxWorkbench(repo, resolved, runner, memory_mb=memory_mb)

    if changes is not None:
        # ``max_runs`` is half the plan's executions in the engine and in ``arcs replay`` alike,
        # so both reserve the same runs for the early bisection.
        proposer.find_culprit = _early_bisect(
            proposer,
            changes,
            repo,
            executions=2 * max(0, max_runs),
            reserved=runs if bench is not None else 0,
            timeout_s=timeout_s,
            open_workbench=open_workbench,
        )
    return proposer


def autofix_reserve(proposer: Proposer) -> int:
    """Executions kept out of the loop's budget for the runs ``proposer`` may make outside the
    loop's meter: its ``autofix_runs`` when it has a bench, and its early bisection's reserve."""
    if not isinstance(proposer, ChangeAwareProposer):
        return 0
    early = proposer.find_culprit
    extra = early.reserve if isinstance(early, EarlyBisect) else 0
    return (proposer.autofix_runs if proposer.bench is not None else 0) + extra


def autofix_runs(proposer: Proposer) -> int:
    """Sandboxed runs the autofix of ``proposer`` made (counted in ``Budget.executions`` by the engine)."""
    if not isinstance(proposer, ChangeAwareProposer) or proposer.bench is None:
        return 0
    return int(getattr(proposer.bench, "runs", 0))


def bind_workbench(proposer: Proposer, workbench: SandboxWorkbench) -> None:
    """Tier 0's early bisection (when ``proposer`` has one) runs in the engine's ``workbench``."""
    early = proposer.find_culprit if isinstance(proposer, ChangeAwareProposer) else None
    if isinstance(early, EarlyBisect):
        early.workbench = workbench


def _early_bisect(
    proposer: ChangeAwareProposer,
    changes: ChangeSet,
    repo: Path,
    *,
    executions: int,
    reserved: int,
    timeout_s: float,
    open_workbench: Callable[[], SandboxWorkbench],
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
        timeout_s=timeout_s,
        budget=lambda: total - autofix_runs(proposer),
        need=need,
        reserve=extra,
        open_workbench=open_workbench,
    )


def outside_runs(proposer: Proposer) -> int:
    """Sandboxed runs ``proposer`` made outside the loop's meter: autofix and the early bisection
    (the engine counts them in ``Budget.executions``)."""
    early = proposer.find_culprit if isinstance(proposer, ChangeAwareProposer) else None
    return autofix_runs(proposer) + (early.runs if isinstance(early, EarlyBisect) else 0)


def early_bisect(proposer: Proposer) -> BisectResult | None:
    """The bisection tier 0 made before its reverts, for :func:`jobs.culprit.after_loop` (None: none)."""
    early = proposer.find_culprit if isinstance(proposer, ChangeAwareProposer) else None
    return early.found if isinstance(early, EarlyBisect) else None


def change_notices(proposer: Proposer, result: RepairResult, changes: ChangeSet | None) -> list[str]:
    """Trace lines: what changed since green, what autofix did, and which commit a winning revert undoes."""
    lines: list[str] = []
    if changes is not None:
        lines.append(
            f"changes since the last green commit {changes.base[:7]}: {len(changes.commits)} commit(s), "
            f"{len(changes.files)} file(s)" + (" (truncated)" if changes.truncated else "")
        )
    if not isinstance(proposer, ChangeAwareProposer):
        return lines
    done = proposer.autofix_result
    if done is not None:
        files = len(done.change.paths) if done.change is not None else 0
        lines.append(
            f"autofix (no LLM) with {', '.join(done.tools) or 'no known tool'} on {files} file(s): "
            f"{done.reason} ({done.runs} run(s))"
        )
    if result.fixed and changes is not None:
        revert = proposer.revert_of(result.edits)
        if revert is not None:
            named = changes.introduced_by(revert.sha) if revert.sha else ""
            lines.append(f"the fix undoes {revert.label}" + (f"; {named}" if named else ""))
    return lines


__all__ = [
    "AUTOFIX_RUNS",
    "MIN_LOOP_RUNS",
    "autofix_reserve",
    "autofix_runs",
    "bind_workbench",
    "change_aware",
    "change_notices",
    "early_bisect",
    "outside_runs",
]
