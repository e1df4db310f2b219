"""The dashboard's counts and rates: totals, weeks, repositories, failure classes, owners.

Part of :mod:`bot.dashboard.queries` (which re-exports it; see its docstring for the definitions).
Results are the frozen types of :mod:`bot.dashboard.queries_results`.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, String, and_, func, literal_column, select

from bot.dashboard.queries_results import (
    ISSUE_CLASS,
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
from bot.dashboard.queries_sql import _as_date, _in_repos, _session, monday, week_start
from bot.store.models import Attempt, Policy, PullRequest
from bot.store.store import Store

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
