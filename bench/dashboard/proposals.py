"""Prototypes of proposed dashboard query changes, timed by the benchmark next to the real ones.

Adopted: ``bot.dashboard.queries.org_overview`` is now this one-pass version (and migration 0003
adds the covering indexes); the prototype stays so the benchmark's "before" runs remain
reproducible. :func:`org_overview_onepass` returns the same
:class:`~bot.dashboard.queries.OrgOverview` as :func:`bot.dashboard.queries.org_overview`
(:func:`same_overview` checks it on the benchmark's data before anything is timed), with 5 SQL
statements instead of 11: the attempts of the window are grouped once by (week, repository,
status), the pull requests once by (week, repository, state), and the time-to-PR samples are
fetched once, instead of once for the totals, once for the weeks and once for the repositories.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Collection
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.dashboard import queries as q
from bot.store.models import Attempt, PullRequest
from bot.store.store import Store


def org_overview_onepass(
    store: Store, owner: str, repos: Collection[str], *, now: dt.datetime, weeks: int = 12
) -> q.OrgOverview:
    """:func:`bot.dashboard.queries.org_overview`, reading each table once per page."""
    weeks = max(1, weeks)
    since = q.window_start(now, weeks)
    last = q.monday(now)
    starts = [last - dt.timedelta(weeks=i) for i in range(weeks - 1, -1, -1)]
    totals = q._Acc()
    by_week: dict[dt.date, q._Acc] = defaultdict(q._Acc)
    by_repo: dict[str, q._Acc] = defaultdict(q._Acc)
    if repos:
        dialect = store.engine.dialect.name
        with Session(store.engine) as session:
            a_week = q.week_start(Attempt.created_at, dialect).label("w")
            a_repo = func.lower(Attempt.repo).label("r")
            sub = (
                select(a_week, a_repo, Attempt.status, Attempt.cost_usd)
                .where(q._in_repos(Attempt.repo, repos), Attempt.created_at >= since)
                .subquery()
            )
            stmt = select(
                sub.c.w, sub.c.r, sub.c.status, func.count(), func.coalesce(func.sum(sub.c.cost_usd), 0.0)
            ).group_by(sub.c.w, sub.c.r, sub.c.status)
            for week, repo, status, count, usd in session.execute(stmt):
                for acc in (totals, by_week[q._as_date(week)], by_repo[str(repo)]):
                    acc.counts[str(status)] += int(count)
                    acc.usd += float(usd or 0.0)
            p_week = q.week_start(PullRequest.created_at, dialect).label("w")
            p_repo = func.lower(PullRequest.repo).label("r")
            p_where = [q._in_repos(PullRequest.repo, repos), PullRequest.created_at >= since]
            psub = select(p_week, p_repo, PullRequest.state).where(*p_where).subquery()
            pstmt = select(psub.c.w, psub.c.r, psub.c.state, func.count()).group_by(
                psub.c.w, psub.c.r, psub.c.state
            )
            for week, repo, state, count in session.execute(pstmt):
                for acc in (totals, by_week[q._as_date(week)], by_repo[str(repo)]):
                    acc.prs[str(state)] += int(count)
            tstmt = (
                select(p_week, p_repo, PullRequest.created_at, Attempt.red_build_at, Attempt.created_at)
                .join(Attempt, Attempt.id == PullRequest.attempt_id)
                .where(*p_where)
            )
            for week, repo, pr_created, red_at, attempt_created in session.execute(tstmt):
                seconds = max(0.0, (pr_created - (red_at or attempt_created)).total_seconds())
                for acc in (totals, by_week[q._as_date(week)], by_repo[str(repo)]):
                    acc.durations.append(seconds)
    names = q._display_names(store, by_repo.keys())
    return q.OrgOverview(
        owner=owner,
        since=since,
        totals=totals.stats(),
        weeks=tuple(
            q.WeekStats(start, by_week[start].stats() if start in by_week else q.Stats()) for start in starts
        ),
        repos=tuple(q.RepoStats(names.get(k, k), by_repo[k].stats()) for k in sorted(by_repo)),
        classes=q.failure_classes(store, repos, since=since),
    )


def same_overview(a: q.OrgOverview, b: q.OrgOverview) -> bool:
    """Whether two overviews show the same numbers (USD compared to 1e-6: sums in another order)."""
    return _close(a.to_json(), b.to_json())


def _close(x: Any, y: Any) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-6)
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(_close(x[k], y[k]) for k in x)
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(_close(i, j) for i, j in zip(x, y, strict=True))
    return bool(x == y)
