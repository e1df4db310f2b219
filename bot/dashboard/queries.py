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
"""

# Long (~1,100 lines): every dashboard query in one place, so the definitions above (attempts, finished,
# rates) are applied the same way by all of them.

from __future__ import annotations

import datetime as dt
import json
import statistics
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import (
    ColumnElement,
    String,
    and_,
    exists,
    func,
    literal_column,
    select,
)
from sqlalchemy.orm import Session

from bot.store.models import Attempt, Event, Policy, PullRequest
from bot.store.store import Store
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


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """An attempt as listed (no patch, files or trace)."""

    id: int
    repo: str
    owner: str
    trigger: str
    status: str
    verdict: str | None
    reason: str | None
    failure_class: str | None
    title: str | None
    tier: str | None
    rounds: int | None
    tokens: int | None
    cost_usd: float | None
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    red_build_at: dt.datetime | None
    run_id: int | None
    issue_number: int | None
    head_branch: str | None
    head_sha: str | None
    requested_by: str | None
    pr_number: int | None
    pr_url: str | None
    pr_state: str | None
    culprit_sha: str | None = None
    """The culprit commit the repair named (from the stored report), when known."""
    reverted: bool = False
    """A ``no_fix`` attempt that opened a revert pull request (its branch is ``arcs/revert/…``)."""

    @property
    def culprit_short(self) -> str:
        """The culprit's abbreviated sha ('' when unknown)."""
        return (self.culprit_sha or "")[:7]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "id": self.id,
            "repo": self.repo,
            "owner": self.owner,
            "trigger": self.trigger,
            "status": self.status,
            "verdict": self.verdict,
            "reason": self.reason,
            "failure_class": self.failure_class,
            "title": self.title,
            "tier": self.tier,
            "rounds": self.rounds,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "created_at": _iso(self.created_at),
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "red_build_at": _iso(self.red_build_at),
            "run_id": self.run_id,
            "issue_number": self.issue_number,
            "head_branch": self.head_branch,
            "head_sha": self.head_sha,
            "requested_by": self.requested_by,
            "pr_number": self.pr_number,
            "pr_url": self.pr_url,
            "pr_state": self.pr_state,
            "culprit_sha": self.culprit_sha,
            "reverted": self.reverted,
        }


_ROW_COLUMNS = (
    Attempt.id,
    Attempt.repo,
    Attempt.owner,
    Attempt.trigger,
    Attempt.status,
    Attempt.verdict,
    Attempt.reason,
    Attempt.failure_class,
    Attempt.title,
    Attempt.tier,
    Attempt.rounds,
    Attempt.tokens,
    Attempt.cost_usd,
    Attempt.created_at,
    Attempt.started_at,
    Attempt.finished_at,
    Attempt.red_build_at,
    Attempt.run_id,
    Attempt.issue_number,
    Attempt.head_branch,
    Attempt.head_sha,
    Attempt.requested_by,
    Attempt.pr_number,
    Attempt.pr_url,
    Attempt.pr_state,
)


_CULPRIT_SHA = Attempt.trace[("culprit", "sha")].as_string().label("culprit_sha")
"""The culprit's sha in the stored report (``attempts.trace``), read in SQL (NULL when absent)."""
_HEX = frozenset("0123456789abcdef")


def _culprit_sha(value: object) -> str | None:
    """A hex sha of 7 to 64 digits, else None (the column holds whatever was stored)."""
    if not isinstance(value, str):
        return None
    sha = value.strip().lower()
    return sha if 7 <= len(sha) <= 64 and set(sha) <= _HEX else None


def _attempt_row(row: Any, *, branch: str | None = None, culprit: object = None) -> AttemptRow:
    values = {c.key: getattr(row, c.key) for c in _ROW_COLUMNS}
    reverted = values["status"] == "no_fix" and (branch or "").startswith(REVERT_BRANCH_PREFIX)
    return AttemptRow(**values, culprit_sha=_culprit_sha(culprit), reverted=reverted)


@dataclass(frozen=True, slots=True)
class AttemptPage:
    """One page of a repository's attempts, newest first."""

    repo: str
    rows: tuple[AttemptRow, ...]
    page: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        """Number of pages (at least 1)."""
        return max(1, -(-self.total // self.per_page))

    @property
    def has_next(self) -> bool:
        """A later (older) page exists."""
        return self.page < self.pages

    @property
    def has_prev(self) -> bool:
        """An earlier (newer) page exists."""
        return self.page > 1


@dataclass(frozen=True, slots=True)
class PullRequestRow:
    """A pull request ARCS opened."""

    repo: str
    number: int
    url: str
    branch: str
    head_sha: str | None
    state: str
    created_at: dt.datetime
    updated_at: dt.datetime
    merged_at: dt.datetime | None
    closed_at: dt.datetime | None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "repo": self.repo,
            "number": self.number,
            "url": self.url,
            "branch": self.branch,
            "head_sha": self.head_sha,
            "state": self.state,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "merged_at": _iso(self.merged_at),
            "closed_at": _iso(self.closed_at),
        }


@dataclass(frozen=True, slots=True)
class EventRow:
    """A recorded event (refusal, error, notice, job failure)."""

    id: int
    kind: str
    message: str
    repo: str | None
    attempt_id: int | None
    created_at: dt.datetime
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "id": self.id,
            "kind": self.kind,
            "message": self.message,
            "repo": self.repo,
            "attempt_id": self.attempt_id,
            "created_at": _iso(self.created_at),
            "data": dict(self.data),
        }


@dataclass(frozen=True, slots=True)
class AttemptDetail:
    """One attempt with what it produced: patch, explanation, trace summary, PR, events.

    The ``files`` column (new file contents, for publishing) is never read.
    """

    row: AttemptRow
    base_branch: str | None
    branch: str | None
    patch: str | None
    explanation: str | None
    trace_path: str | None
    trace_summary: Mapping[str, Any] | None
    options: Mapping[str, Any] | None
    pr: PullRequestRow | None
    events: tuple[EventRow, ...]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready (the trace summary without the rendered markdown and the file contents)."""
        summary = None
        if self.trace_summary is not None:
            # "markdown": the v1 summary; "trace_markdown"/"files": a RepairReport (v2).
            left_out = ("markdown", "trace_markdown", "files")
            summary = {k: v for k, v in self.trace_summary.items() if k not in left_out}
        return {
            **self.row.to_json(),
            "base_branch": self.base_branch,
            "branch": self.branch,
            "patch": self.patch,
            "explanation": self.explanation,
            "options": None if self.options is None else dict(self.options),
            "trace": summary,
            "pull_request": None if self.pr is None else self.pr.to_json(),
            "events": [e.to_json() for e in self.events],
        }


@dataclass(frozen=True, slots=True)
class Problem:
    """A refusal or an error: an event, or an attempt that ended ``refused``/``error`` without one."""

    kind: str
    """``refusal``, ``error``, ``job_failed`` (events), or the attempt status ``refused``/``error``."""
    message: str
    repo: str | None
    attempt_id: int | None
    created_at: dt.datetime
    source: str
    """``event`` or ``attempt``."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "kind": self.kind,
            "message": self.message,
            "repo": self.repo,
            "attempt_id": self.attempt_id,
            "created_at": _iso(self.created_at),
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class PolicyRow:
    """A policy row: the owner's (``repo == ''``) or a repository's."""

    owner: str
    repo: str
    paused: bool | None
    monthly_usd: float | None
    max_prs_per_day: int | None
    quiet_start: int | None
    quiet_end: int | None
    timezone: str | None
    updated_by: str | None
    updated_at: dt.datetime

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "owner": self.owner,
            "repo": self.repo,
            "paused": self.paused,
            "monthly_usd": self.monthly_usd,
            "max_prs_per_day": self.max_prs_per_day,
            "quiet_start": self.quiet_start,
            "quiet_end": self.quiet_end,
            "timezone": self.timezone,
            "updated_by": self.updated_by,
            "updated_at": _iso(self.updated_at),
        }


# --- SQL helpers -------------------------------------------------------------------------------


def week_start(column: Any, dialect: str) -> ColumnElement[str]:
    """SQL for the Monday (UTC) starting the ISO week of timestamp ``column``, as ``YYYY-MM-DD``.

    Constants are inlined (not bound), so the same expression in SELECT and GROUP BY is one
    expression to PostgreSQL.
    """
    if dialect == "postgresql":
        utc = func.timezone(literal_column("'UTC'"), column)
        return func.to_char(func.date_trunc(literal_column("'week'"), utc), literal_column("'YYYY-MM-DD'"))
    if dialect == "sqlite":
        # Stored as text 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC. Only the date part: SQLite keeps
        # milliseconds and would round 23:59:59.9995 into the next day (and week). Then step back
        # 6 days and forward to a Monday.
        day = func.substr(column, literal_column("1"), literal_column("10"))
        return func.date(day, literal_column("'-6 days'"), literal_column("'weekday 1'"))
    raise ValueError(f"week_start: unsupported database {dialect!r}")


def monday(when: dt.datetime | dt.date) -> dt.date:
    """The Monday starting ``when``'s ISO week (a datetime is taken in UTC)."""
    day = when.astimezone(dt.UTC).date() if isinstance(when, dt.datetime) else when
    return day - dt.timedelta(days=day.weekday())


def _in_repos(column: Any, repos: Collection[str]) -> ColumnElement[bool]:
    return func.lower(column).in_(sorted({r.lower() for r in repos}))


def _as_date(value: object) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _session(store: Store) -> Session:
    return Session(store.engine)


# Group keys: a function of (the attempt/PR model's timestamp column, repo column, dialect) → SQL.
_Key = str  # "all" | "week" | "repo"


def _key_expr(key: _Key, created: Any, repo: Any, dialect: str) -> ColumnElement[Any]:
    if key == "week":
        return week_start(created, dialect)
    if key == "repo":
        return func.lower(repo)
    return literal_column("''", String)


def _key_value(key: _Key, value: object) -> Any:
    if key == "week":
        return _as_date(value)
    return str(value or "")


@dataclass
class _Acc:
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    usd: float = 0.0
    prs: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    durations: list[float] = field(default_factory=list)

    def stats(self) -> Stats:
        c = self.counts
        return Stats(
            attempts=sum(c.values()),
            fixed=c["fixed"],
            no_fix=c["no_fix"] + c[REVERTED],
            reverted=c[REVERTED],
            refused=c["refused"],
            errors=c["error"],
            skipped=c["skipped"],
            in_progress=c["queued"] + c["running"],
            partial=c["partial"],
            environment=c["environment"],
            prs_opened=sum(self.prs.values()),
            prs_merged=self.prs["merged"],
            prs_closed=self.prs["closed"],
            total_usd=round(self.usd, 9),
            median_time_to_pr_s=statistics.median(self.durations) if self.durations else None,
        )


def _reverted() -> ColumnElement[bool]:
    """The attempts counted as :data:`REVERTED` (see the module docstring)."""
    return and_(Attempt.status == "no_fix", Attempt.branch.like(REVERT_BRANCH_PREFIX + "%"))


def _move_reverted(counts: dict[str, int], n: int) -> None:
    """Count ``n`` of the ``no_fix`` attempts in ``counts`` as :data:`REVERTED` instead."""
    counts["no_fix"] -= n
    counts[REVERTED] += n


def _grouped(
    store: Store,
    repos: Collection[str],
    key: _Key,
    *,
    since: dt.datetime | None = None,
) -> dict[Any, _Acc]:
    """Attempt counts/USD by status, PR counts by state and time-to-PR samples, per group key."""
    out: dict[Any, _Acc] = defaultdict(_Acc)
    if not repos:
        return out
    dialect = store.engine.dialect.name
    with _session(store) as session:
        # Attempts: GROUP BY key, status over a subquery (the key is computed once per row).
        a_key = _key_expr(key, Attempt.created_at, Attempt.repo, dialect).label("k")
        a_where = [_in_repos(Attempt.repo, repos)]
        if since is not None:
            a_where.append(Attempt.created_at >= since)
        sub = select(a_key, Attempt.status, Attempt.cost_usd).where(*a_where).subquery()
        stmt = select(
            sub.c.k, sub.c.status, func.count(), func.coalesce(func.sum(sub.c.cost_usd), 0.0)
        ).group_by(sub.c.k, sub.c.status)
        for k, status, count, usd in session.execute(stmt):
            acc = out[_key_value(key, k)]
            acc.counts[str(status)] += int(count)
            acc.usd += float(usd or 0.0)
        # Reverted: a separate count over the few no_fix rows (the query above stays on its index).
        rsub = select(a_key).where(*a_where, _reverted()).subquery()
        for k, count in session.execute(select(rsub.c.k, func.count()).group_by(rsub.c.k)):
            _move_reverted(out[_key_value(key, k)].counts, int(count))
        # Pull requests: GROUP BY key, state.
        p_key = _key_expr(key, PullRequest.created_at, PullRequest.repo, dialect).label("k")
        p_where = [_in_repos(PullRequest.repo, repos)]
        if since is not None:
            p_where.append(PullRequest.created_at >= since)
        psub = select(p_key, PullRequest.state).where(*p_where).subquery()
        pstmt = select(psub.c.k, psub.c.state, func.count()).group_by(psub.c.k, psub.c.state)
        for k, state, count in session.execute(pstmt):
            out[_key_value(key, k)].prs[str(state)] += int(count)
        # Time to PR: one row per PR with its attempt (medians are not portable SQL).
        tstmt = (
            select(p_key, PullRequest.created_at, Attempt.red_build_at, Attempt.created_at)
            .join(Attempt, Attempt.id == PullRequest.attempt_id)
            .where(*p_where)
        )
        for k, pr_created, red_at, attempt_created in session.execute(tstmt):
            start = red_at or attempt_created
            seconds = max(0.0, (pr_created - start).total_seconds())
            out[_key_value(key, k)].durations.append(seconds)
    return out


# --- aggregates --------------------------------------------------------------------------------


def stats(store: Store, repos: Collection[str], *, since: dt.datetime | None = None) -> Stats:
    """Headline numbers over ``repos`` (attempts and PRs created at or after ``since``)."""
    return _grouped(store, repos, "all", since=since).get("", _Acc()).stats()


def weekly(store: Store, repos: Collection[str], *, now: dt.datetime, weeks: int) -> tuple[WeekStats, ...]:
    """The last ``weeks`` ISO weeks up to ``now``'s, oldest first; weeks without data are zeros."""
    weeks = max(1, weeks)
    last = monday(now)
    starts = [last - dt.timedelta(weeks=i) for i in range(weeks - 1, -1, -1)]
    since = window_start(now, weeks)
    groups = _grouped(store, repos, "week", since=since)
    return tuple(WeekStats(start, groups[start].stats() if start in groups else Stats()) for start in starts)


def window_start(now: dt.datetime, weeks: int) -> dt.datetime:
    """Monday 00:00 UTC of the first of the last ``weeks`` ISO weeks up to ``now``'s."""
    first = monday(now) - dt.timedelta(weeks=max(1, weeks) - 1)
    return dt.datetime.combine(first, dt.time(), tzinfo=dt.UTC)


def per_repo(
    store: Store, repos: Collection[str], *, since: dt.datetime | None = None
) -> tuple[RepoStats, ...]:
    """One row per visible repository with attempts or PRs, by name."""
    groups = _grouped(store, repos, "repo", since=since)
    names = _display_names(store, groups.keys())
    return tuple(RepoStats(names.get(k, k), groups[k].stats()) for k in sorted(groups))


def _display_names(store: Store, keys: Iterable[str]) -> dict[str, str]:
    """``owner/name`` as GitHub spells it (from the newest attempt), by lowercase name."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    stmt = (
        select(Attempt.repo)
        .where(func.lower(Attempt.repo).in_(wanted))
        .group_by(Attempt.repo)
        .order_by(func.max(Attempt.id))
    )
    with _session(store) as session:
        return {r.lower(): r for r in session.scalars(stmt)}


def failure_classes(
    store: Store, repos: Collection[str], *, since: dt.datetime | None = None
) -> tuple[ClassOutcomes, ...]:
    """Attempt outcomes by failure class, most attempts first (ties by name).

    Unclassified CI attempts are :data:`UNKNOWN_CLASS`; issue/comment-triggered attempts without a
    class are :data:`ISSUE_CLASS`.
    """
    if not repos:
        return ()
    where = [_in_repos(Attempt.repo, repos)]
    if since is not None:
        where.append(Attempt.created_at >= since)
    stmt = (
        select(Attempt.failure_class, Attempt.trigger, Attempt.status, func.count())
        .where(*where)
        .group_by(Attempt.failure_class, Attempt.trigger, Attempt.status)
    )
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    reverted = (
        select(Attempt.failure_class, Attempt.trigger, func.count())
        .where(*where, _reverted())
        .group_by(Attempt.failure_class, Attempt.trigger)
    )
    with _session(store) as session:
        for cls, trigger, status, count in session.execute(stmt):
            name = cls or (UNKNOWN_CLASS if trigger == "ci" else ISSUE_CLASS)
            counts[name][str(status)] += int(count)
        for cls, trigger, count in session.execute(reverted):
            _move_reverted(counts[cls or (UNKNOWN_CLASS if trigger == "ci" else ISSUE_CLASS)], int(count))
    out = [ClassOutcomes(name, tuple((s, c[s]) for s in _statuses(c) if c[s])) for name, c in counts.items()]
    return tuple(sorted(out, key=lambda o: (-o.total, o.failure_class)))


def _statuses(counts: Mapping[str, int]) -> list[str]:
    known = [s for s in STATUS_ORDER if s in counts]
    return known + sorted(s for s in counts if s not in STATUS_ORDER)


def org_overview(
    store: Store, owner: str, repos: Collection[str], *, now: dt.datetime, weeks: int = 12
) -> OrgOverview:
    """The org page's numbers over the last ``weeks`` ISO weeks (totals, weekly, per repo, classes).

    Each table is read once for all three views: attempts grouped by (week, repository, status),
    pull requests by (week, repository, state), and the time-to-PR samples fetched once (the
    separate :func:`stats`, :func:`weekly` and :func:`per_repo` read them three times; on 100k
    attempts this halves the page, see bench/RESULTS.md "Dashboard and metrics at scale").
    """
    weeks = max(1, weeks)
    since = window_start(now, weeks)
    last = monday(now)
    starts = [last - dt.timedelta(weeks=i) for i in range(weeks - 1, -1, -1)]
    totals = _Acc()
    by_week: dict[dt.date, _Acc] = defaultdict(_Acc)
    by_repo: dict[str, _Acc] = defaultdict(_Acc)
    if repos:
        dialect = store.engine.dialect.name
        with _session(store) as session:
            a_week = week_start(Attempt.created_at, dialect).label("w")
            a_repo = func.lower(Attempt.repo).label("r")
            sub = (
                select(a_week, a_repo, Attempt.status, Attempt.cost_usd)
                .where(_in_repos(Attempt.repo, repos), Attempt.created_at >= since)
                .subquery()
            )
            stmt = select(
                sub.c.w, sub.c.r, sub.c.status, func.count(), func.coalesce(func.sum(sub.c.cost_usd), 0.0)
            ).group_by(sub.c.w, sub.c.r, sub.c.status)
            for week, repo, status, count, usd in session.execute(stmt):
                for acc in (totals, by_week[_as_date(week)], by_repo[str(repo)]):
                    acc.counts[str(status)] += int(count)
                    acc.usd += float(usd or 0.0)
            rsub = (
                select(a_week, a_repo)
                .where(_in_repos(Attempt.repo, repos), Attempt.created_at >= since, _reverted())
                .subquery()
            )
            rstmt = select(rsub.c.w, rsub.c.r, func.count()).group_by(rsub.c.w, rsub.c.r)
            for week, repo, count in session.execute(rstmt):
                for acc in (totals, by_week[_as_date(week)], by_repo[str(repo)]):
                    _move_reverted(acc.counts, int(count))
            p_week = week_start(PullRequest.created_at, dialect).label("w")
            p_repo = func.lower(PullRequest.repo).label("r")
            p_where = [_in_repos(PullRequest.repo, repos), PullRequest.created_at >= since]
            psub = select(p_week, p_repo, PullRequest.state).where(*p_where).subquery()
            pstmt = select(psub.c.w, psub.c.r, psub.c.state, func.count()).group_by(
                psub.c.w, psub.c.r, psub.c.state
            )
            for week, repo, state, count in session.execute(pstmt):
                for acc in (totals, by_week[_as_date(week)], by_repo[str(repo)]):
                    acc.prs[str(state)] += int(count)
            tstmt = (
                select(p_week, p_repo, PullRequest.created_at, Attempt.red_build_at, Attempt.created_at)
                .join(Attempt, Attempt.id == PullRequest.attempt_id)
                .where(*p_where)
            )
            for week, repo, pr_created, red_at, attempt_created in session.execute(tstmt):
                seconds = max(0.0, (pr_created - (red_at or attempt_created)).total_seconds())
                for acc in (totals, by_week[_as_date(week)], by_repo[str(repo)]):
                    acc.durations.append(seconds)
    names = _display_names(store, by_repo.keys())
    return OrgOverview(
        owner=owner,
        since=since,
        totals=totals.stats(),
        weeks=tuple(
            WeekStats(start, by_week[start].stats() if start in by_week else Stats()) for start in starts
        ),
        repos=tuple(RepoStats(names.get(k, k), by_repo[k].stats()) for k in sorted(by_repo)),
        classes=failure_classes(store, repos, since=since),
    )


def owners_with_data(
    store: Store, repos: Collection[str], *, since: dt.datetime | None = None
) -> tuple[OwnerSummary, ...]:
    """Owners of ``repos`` that have attempts (at or after ``since`` for the numbers), by name."""
    if not repos:
        return ()
    stmt = (
        select(
            func.lower(Attempt.owner),
            func.max(Attempt.owner),
            func.count(func.distinct(func.lower(Attempt.repo))),
            func.max(Attempt.created_at),
        )
        .where(_in_repos(Attempt.repo, repos))
        .group_by(func.lower(Attempt.owner))
    )
    with _session(store) as session:
        found = [(str(k), str(name), int(n), last) for k, name, n, last in session.execute(stmt)]
    out = []
    for key, name, n_repos, last in sorted(found):
        mine = {r for r in repos if r.lower().startswith(key + "/")}
        # max() over a text column is a string on every backend; the timestamp needs the type.
        last_at = _as_utc(last)
        out.append(OwnerSummary(name, n_repos, stats(store, mine, since=since), last_at))
    return tuple(out)


def _as_utc(value: object) -> dt.datetime | None:
    # An aggregate loses the column type on SQLite (max() of the stored text).
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    parsed = dt.datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def owner_name(store: Store, owner: str) -> str:
    """``owner`` as GitHub spells it (from the newest attempt or policy), else as given."""
    with _session(store) as session:
        found = session.scalars(
            select(Attempt.owner)
            .where(func.lower(Attempt.owner) == owner.lower())
            .order_by(Attempt.id.desc())
            .limit(1)
        ).first()
        if found is None:
            found = session.scalars(
                select(Policy.owner).where(func.lower(Policy.owner) == owner.lower()).limit(1)
            ).first()
    return found or owner


def repo_name(store: Store, repo: str) -> str:
    """``owner/name`` as GitHub spells it (from the newest attempt), else as given."""
    return _display_names(store, [repo.lower()]).get(repo.lower(), repo)


# --- lists ---------------------------------------------------------------------------------------


def repo_attempts(store: Store, repo: str, *, page: int = 1, per_page: int = 50) -> AttemptPage:
    """A page of ``repo``'s attempts, newest first (the caller checked that ``repo`` is visible)."""
    page = max(1, page)
    per_page = max(1, min(per_page, 500))
    where = func.lower(Attempt.repo) == repo.lower()
    stmt = (
        select(*_ROW_COLUMNS, Attempt.branch, _CULPRIT_SHA)
        .where(where)
        .order_by(Attempt.created_at.desc(), Attempt.id.desc())
        .offset((page - 1) * per_page)
        .limit(per_page)
    )
    with _session(store) as session:
        total = int(session.execute(select(func.count()).select_from(Attempt).where(where)).scalar_one())
        rows = tuple(_attempt_row(r, branch=r.branch, culprit=r.culprit_sha) for r in session.execute(stmt))
    return AttemptPage(repo=repo, rows=rows, page=page, per_page=per_page, total=total)


def attempt_detail(store: Store, attempt_id: int, repos: Collection[str]) -> AttemptDetail | None:
    """The attempt with its PR and events; ``None`` when missing or not in ``repos``."""
    visible = {r.lower() for r in repos}
    stmt = select(
        *_ROW_COLUMNS,
        Attempt.base_branch,
        Attempt.branch,
        Attempt.patch,
        Attempt.explanation,
        Attempt.trace_path,
        Attempt.trace,
        Attempt.options,
    ).where(Attempt.id == attempt_id)
    with _session(store) as session:
        row = session.execute(stmt).first()
        if row is None or str(row.repo).lower() not in visible:
            return None
        pr_row = session.scalars(
            select(PullRequest)
            .where(PullRequest.attempt_id == attempt_id)
            .order_by(PullRequest.created_at.desc(), PullRequest.id.desc())
            .limit(1)
        ).first()
        if pr_row is None and row.pr_number is not None:
            pr_row = session.scalars(
                select(PullRequest).where(PullRequest.repo == row.repo, PullRequest.number == row.pr_number)
            ).first()
        events = session.scalars(
            select(Event).where(Event.attempt_id == attempt_id).order_by(Event.created_at, Event.id)
        ).all()
        pr = None if pr_row is None else _pr(pr_row)
        event_rows = tuple(_event(e) for e in events)
    trace = row.trace if isinstance(row.trace, Mapping) else None
    options = row.options if isinstance(row.options, Mapping) else None
    culprit = trace.get("culprit") if trace is not None else None
    return AttemptDetail(
        row=_attempt_row(
            row, branch=row.branch, culprit=culprit.get("sha") if isinstance(culprit, Mapping) else None
        ),
        base_branch=row.base_branch,
        branch=row.branch,
        patch=row.patch,
        explanation=row.explanation,
        trace_path=row.trace_path,
        trace_summary=trace,
        options=options,
        pr=pr,
        events=event_rows,
    )


def _pr(p: PullRequest) -> PullRequestRow:
    return PullRequestRow(
        repo=p.repo,
        number=p.number,
        url=p.url,
        branch=p.branch,
        head_sha=p.head_sha,
        state=p.state,
        created_at=p.created_at,
        updated_at=p.updated_at,
        merged_at=p.merged_at,
        closed_at=p.closed_at,
    )


def _event(e: Event) -> EventRow:
    return EventRow(
        id=e.id,
        kind=e.kind,
        message=e.message,
        repo=e.repo,
        attempt_id=e.attempt_id,
        created_at=e.created_at,
        data=dict(e.data) if isinstance(e.data, Mapping) else {},
    )


def problems(
    store: Store, repos: Collection[str], *, limit: int = 100, offset: int = 0
) -> tuple[Problem, ...]:
    """Refusals and errors in ``repos``, newest first.

    Events of kind ``refusal``/``error``/``job_failed`` (scoped by their repository, or their
    attempt's when the event has none), plus attempts that ended ``refused``/``error`` without
    such an event (so nothing is listed twice).
    """
    if not repos:
        return ()
    limit = max(1, min(limit, 1000))
    take = offset + limit
    event_repo = func.coalesce(Event.repo, Attempt.repo)
    estmt = (
        select(Event.kind, Event.message, event_repo, Event.attempt_id, Event.created_at, Event.id)
        .outerjoin(Attempt, Attempt.id == Event.attempt_id)
        .where(Event.kind.in_(PROBLEM_EVENT_KINDS), _in_repos(event_repo, repos))
        .order_by(Event.created_at.desc(), Event.id.desc())
        .limit(take)
    )
    has_event = exists(
        select(Event.id).where(Event.attempt_id == Attempt.id, Event.kind.in_(PROBLEM_EVENT_KINDS))
    )
    when = func.coalesce(Attempt.finished_at, Attempt.created_at)
    astmt = (
        select(
            Attempt.status, Attempt.reason, Attempt.repo, Attempt.id, Attempt.finished_at, Attempt.created_at
        )
        .where(Attempt.status.in_(PROBLEM_STATUSES), _in_repos(Attempt.repo, repos), ~has_event)
        .order_by(when.desc(), Attempt.id.desc())
        .limit(take)
    )
    found: list[tuple[dt.datetime, int, Problem]] = []
    with _session(store) as session:
        for kind, message, repo, attempt_id, created, eid in session.execute(estmt):
            found.append((created, eid, Problem(kind, message, repo, attempt_id, created, "event")))
        for status, reason, repo, aid, finished, created in session.execute(astmt):
            at = finished or created
            message = reason or f"attempt ended {status}"
            found.append((at, aid, Problem(status, message, repo, aid, at, "attempt")))
    found.sort(key=lambda item: (item[0], item[2].source == "event", item[1]), reverse=True)
    return tuple(p for _, _, p in found[offset:take])


# --- policies ------------------------------------------------------------------------------------


def policies(store: Store, owner: str, repos: Collection[str]) -> tuple[PolicyRow, ...]:
    """The owner's policy row (if any) first, then the rows of visible repositories, by name."""
    visible = {r.lower() for r in repos}
    stmt = select(Policy).where(func.lower(Policy.owner) == owner.lower()).order_by(Policy.repo, Policy.id)
    with _session(store) as session:
        rows = session.scalars(stmt).all()
        out = [
            PolicyRow(
                owner=p.owner,
                repo=p.repo,
                paused=p.paused,
                monthly_usd=p.monthly_usd,
                max_prs_per_day=p.max_prs_per_day,
                quiet_start=p.quiet_start,
                quiet_end=p.quiet_end,
                timezone=p.timezone,
                updated_by=p.updated_by,
                updated_at=p.updated_at,
            )
            for p in rows
            if p.repo == "" or p.repo.lower() in visible
        ]
    return tuple(sorted(out, key=lambda p: (p.repo != "", p.repo.lower())))


# --- traces --------------------------------------------------------------------------------------


def read_trace(
    trace_path: str | None, traces_dir: Path, *, max_bytes: int = MAX_TRACE_BYTES
) -> dict[str, Any] | None:
    """The full trace JSON at ``trace_path`` if it is an ARCS trace inside ``traces_dir``, else None.

    The path comes from the database: anything resolving outside ``traces_dir`` (``..``, symlinks,
    absolute paths elsewhere) is not read.
    """
    if not trace_path:
        return None
    try:
        root = traces_dir.resolve()
        path = Path(trace_path)
        if not path.is_absolute():
            path = root / path
        path = path.resolve()
        if not path.is_relative_to(root) or not path.is_file() or path.stat().st_size > max_bytes:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != "arcs-trace":
        return None
    return data


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
