"""The repository dashboard issue (``.arcs.yml`` ``dashboard_issue: true``): one issue per
repository, kept up to date from the store after each attempt, edited in place.

* :func:`jobs.dashboard_schedule.schedule_dashboard`: an attempt finished
  (:func:`jobs.run.run_attempt`) or was published -> a ``refresh_dashboard`` job
  :data:`~jobs.dashboard_schedule.DEBOUNCE` later, stamped with the time of the change.
* :func:`refresh_dashboard` (the job): reads ``.arcs.yml`` on the default branch (off, malformed
  or absent: nothing is touched on GitHub), finds the issue (:meth:`GitHubGateway.find_dashboard_issue`:
  the bot's own issue with the hidden marker, open or closed), and skips when the issue was
  rendered after the change (a burst of attempts gives one edit, not one per attempt: the rate
  limit); else renders (:mod:`jobs.render_dashboard`, pure) and edits it, or opens it once.
* A closed dashboard is edited as it is, never reopened (closing it hides it; ``dashboard_issue:
  false`` stops it) and never duplicated; one a person deleted is opened again.

The flaky-test section reads the test history (``Deps.history``) through the classifier
(:func:`jobs.test_history.known_flaky_since`): the tests seen failing in the last
:data:`~jobs.test_history.FLAKY_WINDOW` that their whole history calls flaky, each with its flake
rate, runs seen, last seen and evidence sentence.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Final

import structlog

from jobs.attempt import load_config
from jobs.logctx import set_outcome
from jobs.messages import JobRequest, RefreshDashboard
from jobs.policy import merge, monthly_window
from jobs.ports import AttemptStore, AttemptView
from jobs.render_dashboard import (
    MAX_ROWS,
    BudgetLine,
    DashboardData,
    FlakyTest,
    OpenAttempt,
    OpenPr,
    render_dashboard,
    rendered_at,
)
from jobs.render_text import defuse, one_line
from jobs.run import Deps, closing
from jobs.test_history import FLAKY_WINDOW, HistoryCatalog, HistoryStore, known_flaky_since
from runners.errors import ConfigError

log = structlog.get_logger("arcs.pipeline")

__all__ = [
    "collect",
    "flaky_tests",
    "refresh_dashboard",
]

ACTIVE: Final = ("queued", "running")
DEFERRED_MESSAGE: Final = "deferred"
"""The message id the store gives an attempt deferred to after the quiet hours."""
SCAN: Final = 500
"""Attempts of the repository read for open pull requests (newest first)."""


def flaky_tests(history: HistoryCatalog | None, repo: str, now: dt.datetime) -> tuple[FlakyTest, ...]:
    """The known flaky tests of ``repo`` (failing in the last :data:`FLAKY_WINDOW`), most recently
    seen first."""
    return tuple(
        FlakyTest(v.test_id, v.flake_rate, v.runs, v.failures, v.last_seen, v.sentence)
        for v in known_flaky_since(history, repo, now - FLAKY_WINDOW)
    )


def _what(attempt: AttemptView) -> str:
    number = attempt.issue_number
    if attempt.trigger == "ci":
        where = defuse(one_line(attempt.head_branch or (attempt.head_sha or "")[:12], 100))
        return f"CI on `{where}`" + (f" (#{number})" if number else "")
    if attempt.trigger == "issue":
        return f"issue #{number}"
    return f"`/arcs {'revise' if attempt.trigger == 'revise' else 'fix'}` on #{number}"


def _pulls(attempts: Sequence[AttemptView]) -> tuple[OpenPr, ...]:
    found: dict[int, OpenPr] = {}
    for a in attempts:
        if a.pr_number is not None and a.pr_state in (None, "open") and a.pr_number not in found:
            found[a.pr_number] = OpenPr(a.pr_number, a.id, a.branch or "")
    return tuple(sorted(found.values(), key=lambda p: -p.number))


def collect(
    store: AttemptStore,
    repo: str,
    now: dt.datetime,
    *,
    dashboard_url: str = "",
    history: HistoryCatalog | None = None,
) -> DashboardData:
    """Everything the dashboard issue of ``repo`` shows, from the store and the test history
    (None: no test is known flaky)."""
    owner = repo.split("/", 1)[0]
    active = store.attempts(repo=repo, statuses=ACTIVE, limit=MAX_ROWS + 1)
    attempts = tuple(
        OpenAttempt(a.id, a.status, _what(a), a.created_at, waiting=a.message_id == DEFERRED_MESSAGE)
        for a in active
    )
    policy = merge(owner, repo, *store.policy_rows(owner, repo))
    paused = []
    if policy.paused:
        name = repo if policy.paused_scope == "repo" else owner
        paused.append(f"ARCS is paused for `{name}` by an org admin: no repair starts until it is resumed.")
    paused += [f"Attempt #{a.id} waits for the quiet hours to end." for a in attempts if a.waiting]
    start, _end = monthly_window(now, policy.tz)
    lines = [
        BudgetLine(cap.name, store.usd_committed(owner, start, repo=cap.repo), cap.limit_usd)
        for cap in policy.caps
    ]
    if not any(cap.repo == repo for cap in policy.caps):
        lines.append(BudgetLine(repo, store.usd_committed(owner, start, repo=repo)))
    recent = store.attempts(repo=repo, limit=SCAN)
    return DashboardData(
        repo=repo,
        now=now,
        month=f"{start:%Y-%m}",
        attempts=attempts,
        pulls=_pulls(recent),
        paused=tuple(paused),
        flaky=flaky_tests(history, repo, now),
        budget=tuple(lines),
        dashboard_url=dashboard_url,
    )


def _catalog(history: HistoryStore | None) -> HistoryCatalog | None:
    # the worker wires the store, which lists failing tests; a bare history cannot
    return history if isinstance(history, HistoryCatalog) else None


def refresh_dashboard(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """Re-render the dashboard issue of the message's repository (see the module docstring)."""
    msg = job.expect(RefreshDashboard)
    with closing(deps.github(msg.installation_id)) as gh:
        try:
            config = load_config(gh, msg.repo, None)
        except ConfigError:
            set_outcome("config_error")
            return "config_error"
        if not config.dashboard_issue:
            set_outcome("disabled")
            return "disabled"
        issue = gh.find_dashboard_issue(msg.repo)
        last = rendered_at(issue.body) if issue is not None else None
        if (
            issue is not None
            and last is not None
            and msg.requested_at is not None
            and last >= msg.requested_at
        ):
            set_outcome("current", issue=issue.number)
            return "current"  # rendered after the change: it shows it already
        owner, name = msg.repo.split("/", 1)
        public = getattr(deps.settings, "public_url", "")  # the worker's Settings has it
        url = f"{public.rstrip('/')}/orgs/{owner}/repos/{name}" if isinstance(public, str) and public else ""
        data = collect(deps.store, msg.repo, deps.clock(), dashboard_url=url, history=_catalog(deps.history))
        title, body = render_dashboard(data)
        written = gh.write_dashboard_issue(msg.repo, issue.number if issue is not None else None, title, body)
    outcome = "updated" if issue is not None and written.number == issue.number else "opened"
    set_outcome(outcome, issue=written.number)
    log.info("dashboard.refreshed", issue=written.number, outcome=outcome)
    return outcome
