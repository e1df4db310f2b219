"""Change-aware repair in the engine: tier 0's first offers (formatter autofix, reverts of the
change since the last green run) around the proposer a plan uses, and the lines they add to the trace.

The engine calls :func:`change_aware` once it has the runner, and :func:`change_notices` after
the loop. Autofix runs through :class:`jobs.command_bench.SandboxCommandBench` on the same
runner and the repository's own environment (toolchains, ``.arcs.yml`` ``setup``); at most
:data:`AUTOFIX_RUNS` sandboxed runs, besides the loop's own verification of the offer.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from jobs.command_bench import SandboxCommandBench
from jobs.repair.changes import ChangeSet
from jobs.repair.loop import RepairResult
from jobs.repair.ports import Proposer
from jobs.repair.tier0.change_aware import ChangeAwareProposer
from jobs.repair.tier0.formatters import autofix_plan
from runners.base import Runner

AUTOFIX_RUNS = 4


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
) -> Proposer:
    """``inner`` behind a :class:`ChangeAwareProposer` when there is something to offer first
    (``check`` is a formatter/linter check with a fix mode, or the change since green is known)."""
    bench = (
        SandboxCommandBench(repo, runner, memory_mb=memory_mb, env=env, setup=setup)
        if autofix_plan(check) is not None
        else None
    )
    if bench is None and changes is None:
        return inner
    return ChangeAwareProposer(
        inner, check=check, bench=bench, changes=changes, autofix_runs=AUTOFIX_RUNS, timeout_s=timeout_s
    )


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


__all__ = ["AUTOFIX_RUNS", "change_aware", "change_notices"]
