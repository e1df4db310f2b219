"""The dashboard's lists and single records: attempt pages, one attempt, problems, policies, traces.

Part of :mod:`bot.dashboard.queries` (which re-exports it). Rows are the frozen types of
:mod:`bot.dashboard.queries_rows`; like every query, these read only the visible repositories.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import exists, func, select

from bot.dashboard.queries_results import (
    MAX_TRACE_BYTES,
    PROBLEM_EVENT_KINDS,
    PROBLEM_STATUSES,
    REVERT_BRANCH_PREFIX,
)
from bot.dashboard.queries_rows import (
    AttemptDetail,
    AttemptPage,
    AttemptRow,
    EventRow,
    JoinedRunRow,
    OrgDefaultsRow,
    PolicyRow,
    Problem,
    PullRequestRow,
)
from bot.dashboard.queries_sql import _in_repos, _session
from bot.store.models import Attempt, Event, JoinedRun, Policy, PullRequest
from bot.store.store import Store

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


MAX_JOINED_RUNS = 1000
"""Joined runs listed on an attempt's page (a flood is bounded by the runs of one commit)."""

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
        Attempt.failure_signature,
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
        joined = session.execute(
            select(JoinedRun.run_id, JoinedRun.workflow_name, JoinedRun.created_at)
            .where(JoinedRun.attempt_id == attempt_id)
            .order_by(JoinedRun.id)
            .limit(MAX_JOINED_RUNS)
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
        joined_runs=tuple(JoinedRunRow(int(r), w, c) for r, w, c in joined),
        failure_signature=row.failure_signature,
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


# --- organisation defaults -----------------------------------------------------------------------

ORG_DEFAULTS_SCAN = 200
"""Notices of a repository looked at (newest first) for the last ``org_defaults`` one."""


def org_defaults(store: Store, repo: str) -> OrgDefaultsRow | None:
    """The organisation defaults the repository's ``.arcs.yml`` applied when an attempt last read
    it with ``extends`` (the worker's ``org_defaults`` notice); None when none was recorded."""
    stmt = (
        select(Event)
        .where(func.lower(Event.repo) == repo.lower(), Event.kind == "notice")
        .order_by(Event.id.desc())
        .limit(ORG_DEFAULTS_SCAN)
    )
    with _session(store) as session:
        for event in session.scalars(stmt):
            data = event.data if isinstance(event.data, Mapping) else {}
            if data.get("policy") != "org_defaults":
                continue
            inherited = data.get("inherited")
            return OrgDefaultsRow(
                extends=str(data.get("extends") or ""),
                file=str(data.get("file") or ""),
                inherited=tuple(str(k) for k in inherited) if isinstance(inherited, list) else (),
                attempt_id=event.attempt_id,
                read_at=event.created_at,
            )
    return None


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
