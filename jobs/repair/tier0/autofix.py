"""Tier 0, zero LLM: fix a failing formatter/linter check with the tool's own fix mode.

Pure orchestration over the :class:`CommandBench` port. For a check command the table knows
(:mod:`jobs.repair.tier0.formatters`), :func:`autofix` runs the fix command in a fresh copy of the
base tree, reads back the files it changed, and re-runs the *original* check command on base +
that change. A check that passes makes the change a candidate (:meth:`AutofixResult.proposal`),
which the loop verifies like any other.

When the files changed since the last green run are known, the fix first runs on those files
only (a reviewer sees no unrelated reformatting); when that does not make the check pass, once
more on everything the check covers. Each fix and each check is one run, counted against
``max_runs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from jobs.repair.edits import AppliedEdits, FileChange
from jobs.repair.model import Edit, Proposal
from jobs.repair.tier0.formatters import AutofixPlan, autofix_plan

PROPOSER = "autofix"
MISSING_COMMAND = 127
"""What a POSIX shell exits with when the command is not found."""
_OUTPUT_TAIL = 2000

Scope = Literal["changed", "all"]


@dataclass(frozen=True, slots=True)
class CommandRun:
    """One command run in a fresh copy of the base tree (plus a change)."""

    command: str
    exit_code: int
    output: str = ""
    """The end of stdout+stderr (bounded)."""
    duration_s: float = 0.0
    timed_out: bool = False
    change: AppliedEdits = field(default_factory=AppliedEdits)
    """Every file that differs from the base tree after the run (the change it started from included)."""

    @property
    def ok(self) -> bool:
        """Exited 0 within its time."""
        return self.exit_code == 0 and not self.timed_out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping (the change as its paths only)."""
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "duration_s": round(self.duration_s, 3),
            "timed_out": self.timed_out,
            "changed": list(self.change.paths),
            "output": self.output[-_OUTPUT_TAIL:],
        }


@runtime_checkable
class CommandBench(Protocol):
    """Runs one shell command in a fresh sandboxed copy of the base tree and reports what it changed.

    Real: :class:`jobs.command_bench.SandboxCommandBench` (the Runner port, the repository's own
    environment, no network); fake: :class:`jobs.repair.fakes_change.FakeCommandBench`.
    Implementations never raise for command trouble: a missing tool is exit code 127.
    """

    def run_command(
        self, command: str, *, change: AppliedEdits | None = None, timeout_s: float
    ) -> CommandRun:
        """Run ``command`` on base + ``change`` (None: the base) in a fresh copy; one execution."""
        ...


@dataclass(frozen=True, slots=True)
class AutofixAttempt:
    """One fix run and, when it changed something, the check run on its result."""

    scope: Scope
    fix: CommandRun
    check: CommandRun | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "scope": self.scope,
            "fix": self.fix.to_json(),
            "check": None if self.check is None else self.check.to_json(),
        }


@dataclass(frozen=True, slots=True)
class AutofixResult:
    """What :func:`autofix` did: ``fixed`` means the original check passed on base + ``change``."""

    check: str
    fixed: bool
    reason: str
    tools: tuple[str, ...] = ()
    change: AppliedEdits | None = None
    """The candidate patch: the verified change, else the last change a fix made (a partial fix)."""
    attempts: tuple[AutofixAttempt, ...] = ()

    @property
    def runs(self) -> int:
        """Sandboxed executions spent."""
        return sum(1 + (a.check is not None) for a in self.attempts)

    def proposal(self) -> Proposal | None:
        """The change as a candidate for the loop, or None when there is none."""
        if self.change is None or self.change.empty:
            return None
        verdict = "the check passes" if self.fixed else "the check still fails"
        return Proposal(
            edits=edits_for(self.change),
            explanation=f"{', '.join(self.tools)} fix mode on {len(self.change.paths)} file(s); {verdict}",
            proposer=PROPOSER,
            variant="+".join(self.tools),
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping for the trace."""
        return {
            "check": self.check,
            "fixed": self.fixed,
            "reason": self.reason,
            "tools": list(self.tools),
            "files": [] if self.change is None else list(self.change.paths),
            "runs": self.runs,
            "attempts": [a.to_json() for a in self.attempts],
        }


def autofix(
    bench: CommandBench,
    check: str,
    *,
    changed_files: Sequence[str] | None = None,
    timeout_s: float = 300.0,
    max_runs: int = 4,
) -> AutofixResult:
    """Fix the failing ``check`` command with its tool's fix mode and verify with ``check`` itself.

    ``changed_files`` (repository-relative, e.g. the files changed since the last green run)
    limits the first try to them; ``max_runs`` bounds the executions (a try costs two).
    """
    plan = autofix_plan(check)
    if plan is None:
        return AutofixResult(check, False, "not a formatter/linter check with a known fix mode")
    attempts: list[AutofixAttempt] = []
    last: AppliedEdits | None = None
    reason = ""
    for scope, script in _scripts(plan, changed_files):
        if sum(1 + (a.check is not None) for a in attempts) + 2 > max_runs:
            reason = reason or f"budget: {max_runs} runs"
            break
        fix = bench.run_command(script, timeout_s=timeout_s)
        if fix.exit_code == MISSING_COMMAND or fix.timed_out:
            attempts.append(AutofixAttempt(scope, fix))
            why = (
                "timed out" if fix.timed_out else "the tool is not installed in the repository's environment"
            )
            reason = f"{scope}: the fix command {why}"
            break
        if fix.change.empty:
            attempts.append(AutofixAttempt(scope, fix))
            reason = f"{scope}: the fix changed nothing"
            continue
        last = fix.change
        verified = bench.run_command(plan.check, change=fix.change, timeout_s=timeout_s)
        attempts.append(AutofixAttempt(scope, fix, verified))
        if verified.ok:
            return AutofixResult(
                check,
                True,
                f"{scope}: the check passes after the fix",
                plan.tools,
                fix.change,
                tuple(attempts),
            )
        reason = f"{scope}: the check still fails after the fix (exit {verified.exit_code})"
    return AutofixResult(check, False, reason, plan.tools, last, tuple(attempts))


def edits_for(change: AppliedEdits) -> tuple[Edit, ...]:
    """Edits that reproduce ``change`` on the base tree (whole-file replacements)."""
    return tuple(_edit(c) for c in change.changes)


def _edit(c: FileChange) -> Edit:
    if c.before is None:
        return Edit(path=c.path, kind="create", new=c.after or "")
    if c.after is None:
        return Edit(path=c.path, kind="delete_file")
    if not c.before:
        return Edit(path=c.path, kind="insert", line=0, new=c.after)
    return Edit(path=c.path, kind="replace", old=c.before, new=c.after)


def _scripts(plan: AutofixPlan, changed_files: Sequence[str] | None) -> list[tuple[Scope, str]]:
    full = plan.script()
    out: list[tuple[Scope, str]] = []
    if changed_files is not None:
        limited = plan.script(changed_files)
        if limited is not None and limited != full:
            out.append(("changed", limited))
    if full is not None:
        out.append(("all", full))
    return out


__all__ = [
    "PROPOSER",
    "AutofixAttempt",
    "AutofixResult",
    "CommandBench",
    "CommandRun",
    "autofix",
    "edits_for",
]
