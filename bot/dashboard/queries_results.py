"""The dashboard's definitions and aggregate results: statuses, :class:`Stats` and its groupings.

Part of :mod:`bot.dashboard.queries` (which re-exports it; the definitions of attempts, finished,
rates are in its docstring): the status constants every query applies, and the frozen results
of the aggregate queries (:mod:`bot.dashboard.queries_aggregates`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from jobs.branches import BRANCH_PREFIX

FINISHED_STATUSES: tuple[str, ...] = ("fixed", "partial", "no_fix", "error")
"""Attempts that ran to an end (the repair rate's denominator)."""
PROBLEM_EVENT_KINDS: tuple[str, ...] = ("refusal", "error", "job_failed")
PROBLEM_STATUSES: tuple[str, ...] = ("refused", "error")
REVERT_BRANCH_PREFIX = BRANCH_PREFIX + "revert/"
"""The branches of revert pull requests (:func:`jobs.revert_pr.revert_branch`)."""
REVERTED = "reverted"
"""The outcome of a ``no_fix`` attempt that opened a revert pull request (not a status)."""
STATUS_ORDER: tuple[str, ...] = (
    "fixed",
    "partial",
    "no_fix",
    REVERTED,
    "environment",
    "refused",
    "error",
    "skipped",
    "running",
    "queued",
)
"""Attempt statuses (and :data:`REVERTED`) in the order the dashboard lists them."""
UNKNOWN_CLASS = "unknown"
"""Failure class of a CI attempt whose log was not classified."""
ISSUE_CLASS = "issue"
"""Failure class shown for attempts triggered by an issue or a comment (no CI failure)."""
MAX_TRACE_BYTES = 32 * 1024 * 1024
"""Larger trace files are not read by the dashboard."""


# --- results ---------------------------------------------------------------------------------


def _ratio(num: float, den: float) -> float | None:
    return None if den == 0 else num / den


@dataclass(frozen=True, slots=True)
class Stats:
    """Counts and costs of one scope (an org, a repository, a week); see the module docstring."""

    attempts: int = 0
    fixed: int = 0
    no_fix: int = 0
    refused: int = 0
    errors: int = 0
    skipped: int = 0
    in_progress: int = 0
    """Queued or running."""
    partial: int = 0
    environment: int = 0
    prs_opened: int = 0
    prs_merged: int = 0
    prs_closed: int = 0
    total_usd: float = 0.0
    median_time_to_pr_s: float | None = None
    reverted: int = 0
    """Of :attr:`no_fix`: the attempts that opened a revert pull request of the culprit."""

    @property
    def finished(self) -> int:
        """Attempts that ran to an end: fixed + partial + no_fix + error."""
        return self.fixed + self.partial + self.no_fix + self.errors

    @property
    def prs_open(self) -> int:
        """PRs still undecided."""
        return self.prs_opened - self.prs_merged - self.prs_closed

    @property
    def repair_rate(self) -> float | None:
        """fixed / finished, 0..1 (None when nothing finished)."""
        return _ratio(self.fixed, self.finished)

    @property
    def accepted_fix_rate(self) -> float | None:
        """merged / (merged + closed), 0..1 (None when no PR was decided)."""
        return _ratio(self.prs_merged, self.prs_merged + self.prs_closed)

    @property
    def usd_per_fix(self) -> float | None:
        """USD spent per fixed attempt (None without fixes)."""
        return _ratio(self.total_usd, self.fixed)

    def to_json(self) -> dict[str, Any]:
        """The counts and the derived rates, JSON-ready."""
        return {
            "attempts": self.attempts,
            "fixed": self.fixed,
            "no_fix": self.no_fix,
            "reverted": self.reverted,
            "refused": self.refused,
            "errors": self.errors,
            "skipped": self.skipped,
            "in_progress": self.in_progress,
            "partial": self.partial,
            "environment": self.environment,
            "finished": self.finished,
            "prs_opened": self.prs_opened,
            "prs_merged": self.prs_merged,
            "prs_closed": self.prs_closed,
            "prs_open": self.prs_open,
            "repair_rate": _round(self.repair_rate),
            "accepted_fix_rate": _round(self.accepted_fix_rate),
            "median_time_to_pr_s": _round(self.median_time_to_pr_s, 1),
            "total_usd": round(self.total_usd, 6),
            "usd_per_fix": _round(self.usd_per_fix),
        }


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(frozen=True, slots=True)
class WeekStats:
    """One ISO week."""

    start: dt.date
    """The Monday (UTC) the week starts on."""
    stats: Stats

    @property
    def label(self) -> str:
        """``2024-W05``."""
        year, week, _ = self.start.isocalendar()
        return f"{year}-W{week:02d}"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"week": self.label, "start": self.start.isoformat(), **self.stats.to_json()}


@dataclass(frozen=True, slots=True)
class RepoStats:
    """One repository's row of the per-repo table."""

    repo: str
    stats: Stats

    @property
    def name(self) -> str:
        """The part after ``owner/``."""
        return self.repo.split("/", 1)[-1]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"repo": self.repo, **self.stats.to_json()}


@dataclass(frozen=True, slots=True)
class ClassOutcomes:
    """Attempt outcomes of one failure class."""

    failure_class: str
    counts: tuple[tuple[str, int], ...]
    """``(status, count)`` in :data:`STATUS_ORDER`, zero counts left out."""

    @property
    def total(self) -> int:
        """All attempts of the class."""
        return sum(n for _, n in self.counts)

    def count(self, status: str) -> int:
        """Attempts of the class with ``status``."""
        return dict(self.counts).get(status, 0)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"failure_class": self.failure_class, "total": self.total, "counts": dict(self.counts)}


@dataclass(frozen=True, slots=True)
class OrgOverview:
    """Everything the org page shows above the policy panel."""

    owner: str
    since: dt.datetime
    """Start of the window (Monday 00:00 UTC of the first week)."""
    totals: Stats
    weeks: tuple[WeekStats, ...]
    repos: tuple[RepoStats, ...]
    classes: tuple[ClassOutcomes, ...]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "owner": self.owner,
            "since": self.since.isoformat(),
            "totals": self.totals.to_json(),
            "weeks": [w.to_json() for w in self.weeks],
            "repos": [r.to_json() for r in self.repos],
            "failure_classes": [c.to_json() for c in self.classes],
        }


@dataclass(frozen=True, slots=True)
class OwnerSummary:
    """An owner on the index page."""

    owner: str
    repos: int
    """Visible repositories with attempts."""
    stats: Stats
    last_attempt_at: dt.datetime | None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "owner": self.owner,
            "repos": self.repos,
            "last_attempt_at": _iso(self.last_attempt_at),
            **self.stats.to_json(),
        }


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat()
