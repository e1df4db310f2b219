"""What the dashboard shows, read from the store: counts, rates, costs, lists (SQLite and PostgreSQL).

Every function takes the :class:`~bot.store.store.Store` and the set of repositories the viewer
may see (lowercase ``owner/name``, :meth:`bot.dashboard.viewer.Viewer.visible_repos`); rows of
other repositories are never read. Results are frozen dataclasses.

Definitions (the same for the org, a repository and a week):

- **attempts**: attempt rows created in the window, whatever their status.
- **finished**: attempts that ran to an end, ``fixed`` + ``partial`` + ``no_fix`` + ``error``
  (``partial``: the targets pass but the command still fails on tests that failed before; it is
  not a fix). ``environment`` (the tests could not run: a missing command or dependency) is, like
  refused, not a repair that was attempted. Refused (policy)
  and skipped attempts never tried a repair and do not count; queued/running ones are not done.
- **repair rate** = fixed / finished (``None`` when nothing finished).
- **reverted**: ``no_fix`` attempts that opened a revert pull request of the culprit commit
  (``.arcs.yml`` ``on_no_fix: revert``; the attempt's branch is ``arcs/revert/<sha7>``). They stay
  ``no_fix`` in ``finished`` and in the repair rate (a revert is not a fix); :attr:`Stats.reverted`
  counts them apart, and the breakdown by failure class lists them as ``reverted`` instead of
  ``no_fix``.
- **PRs opened**: ``pull_requests`` rows created in the window; **merged** / **closed**: those of
  them in that state now (the cohort of the week the PR was opened, not the week it was merged).
- **accepted-fix rate** = merged / (merged + closed): of the PRs a human decided on, the share
  merged; open PRs are undecided and left out (``None`` when none was decided).
- **time to PR**: from the red build (``attempts.red_build_at``, else the attempt's
  ``created_at``) to ``pull_requests.created_at``; the median over the window's PRs.
- **USD**: the sum of ``attempts.cost_usd``; **USD per fix** = USD / fixed (``None`` without fixes).

Weeks are ISO weeks (Monday 00:00 UTC); the bucket is computed in SQL by :func:`week_start`
(``date_trunc`` on PostgreSQL, ``date(…, 'weekday 1')`` on SQLite), always as ``YYYY-MM-DD``.

The code is split by concern and re-exported here, so callers import from this module alone:
:mod:`~bot.dashboard.queries_results` (the status constants and the aggregate results),
:mod:`~bot.dashboard.queries_rows` (the listed rows), :mod:`~bot.dashboard.queries_sql` (the
week bucket and repository scoping), :mod:`~bot.dashboard.queries_aggregates` (counts and rates)
and :mod:`~bot.dashboard.queries_detail` (attempt pages, one attempt, problems, policies, traces).
"""

from __future__ import annotations

from bot.dashboard.queries_aggregates import (
    failure_classes,
    org_overview,
    owner_name,
    owners_with_data,
    per_repo,
    repo_name,
    stats,
    weekly,
    window_start,
)
from bot.dashboard.queries_detail import (
    attempt_detail,
    org_defaults,
    policies,
    problems,
    read_trace,
    repo_attempts,
)
from bot.dashboard.queries_results import (
    FINISHED_STATUSES,
    ISSUE_CLASS,
    PROBLEM_EVENT_KINDS,
    PROBLEM_STATUSES,
    REVERT_BRANCH_PREFIX,
    REVERTED,
    STATUS_ORDER,
    UNKNOWN_CLASS,
    ClassOutcomes,
    OrgOverview,
    OwnerSummary,
    RepoStats,
    Stats,
    WeekStats,
)
from bot.dashboard.queries_results import MAX_TRACE_BYTES as MAX_TRACE_BYTES
from bot.dashboard.queries_rows import (
    AttemptDetail,
    AttemptPage,
    AttemptRow,
    EventRow,
    OrgDefaultsRow,
    PolicyRow,
    Problem,
    PullRequestRow,
)
from bot.dashboard.queries_sql import monday, week_start

__all__ = [
    "FINISHED_STATUSES",
    "ISSUE_CLASS",
    "PROBLEM_EVENT_KINDS",
    "PROBLEM_STATUSES",
    "REVERTED",
    "REVERT_BRANCH_PREFIX",
    "STATUS_ORDER",
    "UNKNOWN_CLASS",
    "AttemptDetail",
    "AttemptPage",
    "AttemptRow",
    "ClassOutcomes",
    "EventRow",
    "OrgDefaultsRow",
    "OrgOverview",
    "OwnerSummary",
    "PolicyRow",
    "Problem",
    "PullRequestRow",
    "RepoStats",
    "Stats",
    "WeekStats",
    "attempt_detail",
    "failure_classes",
    "monday",
    "org_defaults",
    "org_overview",
    "owner_name",
    "owners_with_data",
    "per_repo",
    "policies",
    "problems",
    "read_trace",
    "repo_attempts",
    "repo_name",
    "stats",
    "week_start",
    "weekly",
    "window_start",
]
