"""One repair attempt as the GitHub messages describe it: :class:`RepairSummary` (pure values).

:func:`jobs.report_summary.attempt_summary` reads it from a stored attempt (its columns and the
:class:`jobs.repair.report.RepairReport` in ``attempt.trace``); :mod:`jobs.render` turns it into
the pull request, check run and comments; the GitHub Action maps its report onto the same value
(:mod:`bot.action.summary`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from jobs.repair.report import Culprit, FailureSpot

__all__ = ["DiffStats", "RepairSummary", "TestTally", "diff_stats"]


@dataclass(frozen=True, slots=True)
class TestTally:
    """A test run reduced to counts (and the ids still failing)."""

    __test__ = False  # not a pytest class

    passed: int = 0
    failed: int = 0
    errors: int = 0
    failing: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """No failure and no error."""
        return self.failed == 0 and self.errors == 0

    def label(self) -> str:
        """``2 failed, 10 passed`` (errors only when there are some)."""
        parts = []
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.errors:
            parts.append(f"{self.errors} error{'s' if self.errors != 1 else ''}")
        parts.append(f"{self.passed} passed")
        return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class DiffStats:
    """Files touched by a diff and its added/removed line counts."""

    files: tuple[str, ...] = ()
    insertions: int = 0
    deletions: int = 0

    def label(self) -> str:
        """``2 files changed, +5 −3``."""
        n = len(self.files)
        return f"{n} file{'s' if n != 1 else ''} changed, +{self.insertions} −{self.deletions}"


@dataclass(frozen=True, slots=True)
class RepairSummary:
    """Everything the GitHub messages say about one repair attempt."""

    verdict: str
    fixed: bool
    reason: str = ""
    """One line: why this verdict (shown when there is no fix)."""
    kind: Literal["ci", "issue"] = "ci"
    failure_summary: str = ""
    """What failed: the failing step/tests, or the issue's gist (untrusted text)."""
    root_cause: str = ""
    """The explanation of the root cause and of the change (model output: untrusted)."""
    diff: str = ""
    diff_stats: DiffStats | None = None
    """None: computed from ``diff``."""
    target_tests: tuple[str, ...] = ()
    tests_before: TestTally | None = None
    tests_after: TestTally | None = None
    regression: str = ""
    """The regression suite's result in words (``412 passed, no new failure``)."""
    regression_passed: bool | None = None
    gates: tuple[tuple[str, bool, str], ...] = ()
    """``(name, passed, detail)`` for each quality gate."""
    tokens: int = 0
    cost_usd: float = 0.0
    rounds: int = 0
    duration_s: float = 0.0
    tier: str = ""
    trace_markdown: str = ""
    issue_number: int | None = None
    issue_title: str = ""
    failing_run_url: str = ""
    failing_job: str = ""
    head_sha: str = ""
    attempt_id: str = ""
    attempt_url: str = ""
    pre_existing: tuple[str, ...] = ()
    """``partial``: tests that still fail and already failed before the change."""
    verification: str = ""
    """The final verification run of the exact test command, in words ('' when none ran)."""
    changes: str = ""
    """The change since the last green run in one line (``abc1234..def5678, 3 commits``; '')."""
    culprit: Culprit | None = None
    """The commit that turned CI red, when known (bisected, or the only one since green)."""
    on_no_fix: str = ""
    """``.arcs.yml`` ``on_no_fix`` in effect for the repair (``report``/``revert``; '' unknown)."""
    revert_sha: str = ""
    """The culprit a verified revert pull request is (being) opened for ('' none)."""
    revert_skipped: str = ""
    """Under ``on_no_fix: revert``: why no revert was opened ('' when not recorded)."""
    dependency: str = ""
    """A dependency update's section (#27, ``jobs.render_depupdate.dependency_markdown``, already
    defused and fenced): the check-run summary and the pull request body append it ('' none)."""
    failure_spots: tuple[FailureSpot, ...] = ()
    """Where the failing tests failed (repository files and lines; the check run annotates them)."""
    refused: tuple[str, ...] = ()
    """Candidates the patch threat check refused, one line each naming its rule
    (:func:`jobs.repair.threats.threat_notices` of the report's notices)."""

    @property
    def partial(self) -> bool:
        """The verdict is ``partial``: the targets pass, the command still fails on old failures."""
        return self.verdict == "partial"

    @property
    def stats(self) -> DiffStats:
        """``diff_stats``, or what the diff says."""
        return self.diff_stats if self.diff_stats is not None else diff_stats(self.diff)


def diff_stats(diff: str) -> DiffStats:
    """Files, insertions and deletions of a unified diff."""
    files: list[str] = []
    plus = minus = 0
    old_path = ""
    for line in diff.splitlines():
        if line.startswith("--- "):
            old_path = line[4:].split("\t", 1)[0].strip()
            continue
        if line.startswith("+++ "):
            new_path = line[4:].split("\t", 1)[0].strip()
            path = old_path if new_path == "/dev/null" else new_path
            path = path[2:] if path.startswith(("a/", "b/")) else path
            if path and path != "/dev/null" and path not in files:
                files.append(path)
            continue
        if line.startswith("+"):
            plus += 1
        elif line.startswith("-"):
            minus += 1
    return DiffStats(files=tuple(files), insertions=plus, deletions=minus)
