"""After the loop, with the change since the last green run known (issue #14): name the culprit
commit, and (``on_no_fix: revert``) offer its verified revert.

:func:`after_loop` runs in the engine while the sandbox workbench is still open:

* **culprit** — one commit since green: that commit (``single_commit``); several: a bisection
  (:func:`jobs.repair.bisect.bisect`) that runs only the reproduced failing targets at each probed
  commit (the tree at that commit, :func:`jobs.history.tree_at`, as a change of the checkout),
  at most :data:`BISECT_MAX_RUNS` runs and never more than the executions the loop left. Only after
  a reproduced failure (a flaky or unreproduced one names nobody). When tier 0 already bisected
  before its reverts (:class:`EarlyBisect`, so that the culprit's revert is offered first), that
  bisection is recorded instead, never a second one;
* **revert** — the plan asks for it (``on_no_fix: revert``, default branch only), no forward fix
  passed and a culprit is known: the culprit is reverted on the checkout
  (:func:`jobs.history.reverted`) and the exact final verification command runs on it; the
  revert is kept only when that run passes.

Every run is charged to the repair's one :class:`~jobs.repair.meter.BudgetMeter` before it
starts (the early bisection's too); the engine puts the lines and the ``changes`` record in the trace.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from jobs.history import Files, reverted, tree_at
from jobs.plan import RepairPlan
from jobs.repair.bisect import BisectResult, Outcome, bisect
from jobs.repair.changes import ChangeSet
from jobs.repair.edits import AppliedEdits, FileChange
from jobs.repair.loop import RepairResult
from jobs.repair.meter import BudgetMeter
from jobs.repair.report import Culprit, RevertResult
from jobs.repair.trace_read import Verification
from jobs.repair.workbench import TestOutcome
from jobs.sandbox_workbench import SandboxWorkbench
from runners import wsfs

log = structlog.get_logger("arcs.culprit")

BISECT_MAX_RUNS = 6
NOISY_BISECT_MAX_RUNS = 20
"""A flake-aware bisection repeats probes (#26): its own cap, still within the runs left."""
"""Sandboxed runs one bisection may make (enough for 64 commits)."""
_MODE_EXEC = 0o100755
_MODE_FILE = 0o100644


@dataclass(frozen=True, slots=True)
class ChangeOutcome:
    """What :func:`after_loop` found, and what it cost."""

    changes: str = ""
    """The one-line range (:func:`changes_line`; '' without a change signal)."""
    culprit: Culprit | None = None
    revert: RevertResult | None = None
    revert_skipped: str = ""
    """``on_no_fix: revert`` and no verified revert: why, in one line."""
    notices: tuple[str, ...] = ()
    record: Mapping[str, Any] = field(default_factory=dict)
    """``trace.repo["changes"]``."""


def changes_line(changes: ChangeSet) -> str:
    """``abc1234..def5678, 3 commits, 4 files`` (``(truncated)`` when the reader cut it)."""

    def n(count: int, word: str) -> str:
        return f"{count} {word}" + ("" if count == 1 else "s")

    line = f"{changes.base[:7]}..{changes.head[:7]}, {n(len(changes.commits), 'commit')}, {n(len(changes.files), 'file')}"
    return line + (" (truncated)" if changes.truncated else "")


def after_loop(
    plan: RepairPlan,
    result: RepairResult,
    workbench: SandboxWorkbench,
    repo: Path,
    meter: BudgetMeter,
    *,
    early: BisectResult | None = None,
    flake_rate: float = 0.0,
) -> ChangeOutcome:
    """The culprit and the revert (see the module docstring); never raises for git or test trouble.
    ``meter``: the repair's, which every run here is charged to (what it has left bounds them).
    ``early``: the bisection made before the loop. ``flake_rate``: the failing targets' measured
    rate of false failures (#26; 0: one run per probe)."""
    changes = plan.changes
    notes = [plan.change_note] if plan.change_note else []
    wants_revert = plan.on_no_fix == "revert" and not result.fixed
    if changes is None:
        skipped = "the change since the last green run is not known" if wants_revert else ""
        return ChangeOutcome(notices=tuple(notes), revert_skipped=skipped)
    # What the search, the autofix and the early bisection left (no clock read: the wall test
    # below reads the search's end, as it always has).
    left = meter.budget.executions - meter.executions
    timeout = _timeout(plan, result)
    reproduced = result.trace.reproduction.verdict == "reproduced"
    record: dict[str, Any] = {
        "base": changes.base,
        "head": changes.head,
        "commits": [{"sha": c.sha, "title": c.title, "author": c.author} for c in changes.commits],
        "files": list(changes.paths),
        "truncated": changes.truncated,
        "source": plan.change_note,
    }
    search = _Search(workbench, repo, timeout, meter.count_runs)
    culprit: Culprit | None = None
    if not reproduced:
        notes.append("culprit: not looked for (the failure did not reproduce)")
    else:
        cap = NOISY_BISECT_MAX_RUNS if flake_rate > 0 else BISECT_MAX_RUNS
        allowed = min(cap, left - (1 if wants_revert else 0))
        if plan.budget.wall_s - result.spend.wall_s < timeout:
            allowed = 0
        culprit = search.culprit(
            changes,
            tuple(result.trace.reproduction.targets),
            allowed,
            notes,
            record,
            early=early,
            flake_rate=flake_rate,
        )
    revert: RevertResult | None = None
    skipped = ""
    if wants_revert:
        if not reproduced:
            skipped = "the failure did not reproduce in the sandbox"
        elif culprit is None:
            skipped = "no culprit commit was found"
        elif meter.budget.executions - meter.executions < 1:
            skipped = "no test runs left in the budget"
        else:
            revert, skipped = search.revert(culprit.sha)
            record["revert"] = {"sha": culprit.sha, "passed": revert is not None}
        notes.append(
            f"revert of {culprit.short if culprit else 'the culprit'}: "
            + ("passes the final verification" if revert is not None else f"not offered ({skipped})")
        )
    return ChangeOutcome(
        changes=changes_line(changes),
        culprit=culprit,
        revert=revert,
        revert_skipped=skipped,
        notices=tuple(notes),
        record=record,
    )


def _timeout(plan: RepairPlan, result: RepairResult) -> float:
    cfg = plan.loop
    base = result.trace.reproduction.baseline
    if base is None or base.timed_out:
        return cfg.test_timeout_s
    return min(cfg.test_timeout_s, max(cfg.timeout_floor_s, cfg.timeout_factor * base.duration_s))


def _culprit_of(found: BisectResult, changes: ChangeSet) -> Culprit | None:
    if found.culprit is None:
        return None
    info = changes.commit(found.culprit)
    found_by = "bisect" if found.status == "found" else "single_commit"
    return Culprit(
        found.culprit,
        info.title if info is not None else "",
        info.author if info is not None else "",
        found_by,
        found.runs,
        found.probability,
    )


def as_change(repo: Path, files: Files) -> AppliedEdits:
    """``files`` (path -> new text, None: deleted) as a change of the work tree at ``repo``."""
    out: list[FileChange] = []
    for rel, new in sorted(files.items()):
        old = wsfs.text_or_none(repo, rel)
        st = wsfs.entry_stat(repo, rel) if old is not None else None
        mode = _MODE_EXEC if st is not None and st.st_mode & 0o111 else _MODE_FILE
        if old != new:
            out.append(FileChange(rel, old, new, mode))
    return AppliedEdits(tuple(out))


class _Search:
    """The sandboxed runs after the loop: probes of a bisection, the revert's verification."""

    def __init__(
        self, workbench: SandboxWorkbench, repo: Path, timeout: float, count: Callable[[int], None]
    ) -> None:
        self.workbench = workbench
        self.repo = repo
        self.timeout = timeout
        self.count = count
        """Charges a run to the repair's meter before it starts."""

    def culprit(
        self,
        changes: ChangeSet,
        targets: tuple[str, ...],
        allowed: int,
        notes: list[str],
        record: dict[str, Any],
        *,
        early: BisectResult | None = None,
        flake_rate: float = 0.0,
    ) -> Culprit | None:
        """The single commit, else ``early`` (a bisection made before the loop) or a bisection
        within ``allowed`` runs (lines in ``notes``)."""
        commits = changes.commits
        culprit: Culprit | None = None
        if len(commits) == 1:
            only = commits[0]
            culprit = Culprit(only.sha, only.title, only.author, "single_commit", 0)
        elif len(commits) > 1 and early is None and allowed < 1:
            notes.append("culprit: no bisection (no test runs or time left in the budget)")
        elif len(commits) > 1:
            found = early or bisect(
                [c.sha for c in commits],
                lambda sha: self.probe(sha, targets),
                budget=allowed,
                flake_rate=flake_rate if flake_rate > 0 else None,
            )
            record["bisect"] = found.to_json()
            culprit = _culprit_of(found, changes)
            if culprit is None:
                suspects = ", ".join(s[:7] for s in found.suspects[:8])
                notes.append(
                    f"culprit: bisection {found.status} after {found.runs} run(s); suspects {suspects}"
                )
        if culprit is not None:
            record["culprit"] = culprit.to_json()
            how = f"bisected in {culprit.runs} run(s)" if culprit.found_by == "bisect" else "the only commit"
            if culprit.probability is not None:
                how += f", probability {culprit.probability:.2f} at flake rate {flake_rate:.2f}"
            named = changes.introduced_by(culprit.sha) or f"introduced by {culprit.short}"
            notes.append(f"culprit: {named} — {how}")
        return culprit

    def probe(self, sha: str, targets: tuple[str, ...]) -> Outcome:
        """The failing targets (none: the whole command) on the tree at ``sha``."""
        try:
            files = tree_at(self.repo, sha)
        except Exception as exc:  # git trouble: this commit cannot be tested
            log.warning("repair.bisect_tree", sha=sha[:12], error=str(exc)[:200])
            return "skip"
        if files is None:
            return "skip"
        present = targets_at(
            targets, lambda rel: files[rel] if rel in files else wsfs.text_or_none(self.repo, rel)
        )
        self.count(1)
        try:
            outcome = self.workbench.run_tests(
                as_change(self.repo, files), select=present or None, timeout_s=self.timeout
            )
        except Exception as exc:  # a crashed run says nothing about the commit
            log.warning("repair.bisect_run", sha=sha[:12], error=str(exc)[:200])
            return "skip"
        return judge(outcome, present)

    def revert(self, sha: str) -> tuple[RevertResult | None, str]:
        """The revert of ``sha`` if it passes the exact final verification, else why not."""
        try:
            files = reverted(self.repo, sha)
        except Exception as exc:
            log.warning("repair.revert_failed", sha=sha[:12], error=str(exc)[:200])
            files = None
        if not files:
            return None, f"the revert of {sha[:7]} does not apply cleanly"
        change = as_change(self.repo, files)
        self.count(1)
        try:
            outcome = self.workbench.verify(change, timeout_s=self.timeout)
        except Exception as exc:
            log.warning("repair.revert_verify_crashed", sha=sha[:12], error=str(exc)[:200])
            return None, f"the final verification of the revert crashed: {type(exc).__name__}"
        command = outcome.command or self.workbench.exact.command
        passed = outcome.exit_code == 0 and not outcome.timed_out
        verification = Verification(
            command=command,
            exit_code=outcome.exit_code,
            duration_s=round(outcome.duration_s, 3),
            passed=len(outcome.passed),
            failed=len(outcome.failed),
            errors=len(outcome.errors),
            timed_out=outcome.timed_out,
            passed_verification=passed,
            candidate="revert",
            timeout_s=round(self.timeout, 3),
        )
        if not passed:
            why = "timed out" if outcome.timed_out else f"exit {outcome.exit_code}"
            return None, f"the revert did not pass `{command}` ({why})"
        return RevertResult(sha=sha, patch=change.diff(), files=change.after, verification=verification), ""


class EarlyBisect:
    """A bisection on the failing targets before tier 0 ranks its reverts (the culprit's first),
    in the repair's own ``workbench``: at most ``budget()`` runs (asked when it starts: what the
    reserve still holds), each charged with ``count`` (the repair's meter), made once;
    :func:`after_loop` records :attr:`found` instead of bisecting again."""

    def __init__(
        self,
        changes: ChangeSet,
        repo: Path,
        workbench: SandboxWorkbench,
        *,
        timeout_s: float,
        budget: Callable[[], int],
        need: int,
        count: Callable[[int], None],
        reserve: int = 0,
    ) -> None:
        self.changes = changes
        self.repo = repo
        self.workbench = workbench
        self.timeout_s = timeout_s
        self.budget = budget
        self.need = need
        self.count = count
        self.reserve = reserve
        """Executions kept out of the search's window for this bisection (besides the autofix reserve)."""
        self.found: BisectResult | None = None
        self.skipped = ""

    def __call__(self, targets: tuple[str, ...]) -> str | None:
        """The first bad commit for ``targets`` (empty: the whole command), or None. Bisects only
        when the budget holds the ``need`` runs a clean search takes (else leaves it to after the loop)."""
        if self.found is not None or self.skipped:
            return self.found.culprit if self.found is not None else None
        allowed = self.budget()
        if allowed < self.need:
            self.skipped = f"{allowed} run(s) left, {self.need} needed"
            return None
        search = _Search(self.workbench, self.repo, self.timeout_s, self.count)
        commits = [c.sha for c in self.changes.commits]
        self.found = bisect(commits, lambda sha: search.probe(sha, targets), budget=allowed)
        return self.found.culprit


def targets_at(targets: Sequence[str], read: Callable[[str], str | None]) -> tuple[str, ...]:
    """The ``targets`` that exist in a tree whose files ``read`` gives (None: absent): a
    ``path::name`` id whose file is absent there, or does not mention the test's name, was added
    later; selecting it would make the run fail to start (pytest: "not found"), which says nothing
    about the commit. Ids without ``::`` are kept. Empty when none is left: run the whole command."""
    out: list[str] = []
    for t in targets:
        path, sep, rest = t.partition("::")
        if not sep:
            out.append(t)
            continue
        text = read(path)
        name = re.split(r"[\[(]", rest.rsplit("::", 1)[-1], maxsplit=1)[0].strip()
        if text is not None and (not name or name in text):
            out.append(t)
    return tuple(out)


def judge(outcome: TestOutcome, targets: Sequence[str]) -> Outcome:
    """A probe's answer: ``fail`` when a target fails (with no targets: the command fails),
    ``pass`` when they pass, ``skip`` when the run says nothing (killed, environment trouble)."""
    if outcome.timed_out or outcome.environment:
        return "skip"
    if not targets:
        return "pass" if outcome.exit_code == 0 else "fail"
    failing = outcome.failing
    if any(t in failing for t in targets):
        return "fail"
    if all(t in outcome.passed for t in targets) or (outcome.exit_code == 0 and not outcome.broken):
        return "pass"
    return "skip"


__all__ = [
    "BISECT_MAX_RUNS",
    "NOISY_BISECT_MAX_RUNS",
    "ChangeOutcome",
    "EarlyBisect",
    "after_loop",
    "as_change",
    "changes_line",
    "judge",
    "targets_at",
]
