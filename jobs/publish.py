"""Publishing: a fixed attempt becomes a branch and a pull request (the ``publish_result`` job),
and what became of ARCS' pull requests is recorded (the ``record_pr_outcome`` job).

``publish_result`` publishes once: the branch name is a function of what is repaired, the gateway
updates an open pull request for the branch instead of opening a second one, and
:meth:`jobs.ports.AttemptStore.begin_publish` lets only one worker publish at a time. It raises on
failure so the queue retries it. The pull request's text comes from the stored attempt alone
(its :class:`jobs.repair.report.RepairReport`: :func:`jobs.report_summary.attempt_summary` ->
:mod:`jobs.render`). ``draft`` and labels are the gateway's business: the App's gateway reads
them from ``.arcs.yml`` on the default branch.
"""

from __future__ import annotations

import datetime as dt

import structlog
from structlog.contextvars import bind_contextvars

from jobs import render
from jobs.branches import branch_name
from jobs.logctx import set_outcome
from jobs.messages import JobRequest, PublishResult, RecordPrOutcome
from jobs.ports import AttemptView
from jobs.report_summary import attempt_summary
from jobs.run import AttemptRun, Deps, closing

log = structlog.get_logger("arcs.pipeline")

PUBLISH_STALE_AFTER = dt.timedelta(minutes=15)
"""A ``publishing`` claim older than this belongs to a dead worker and can be taken over."""


def publish_result(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """Push the fix of a ``fixed`` attempt to its branch and open (or update) its pull request."""
    attempt_id = job.expect(PublishResult).attempt_id
    bind_contextvars(attempt_id=str(attempt_id))
    store = deps.store
    attempt = store.get_attempt(attempt_id)
    # `partial` attempts carry files only when `.arcs.yml` asked for a pull request (open_pr_on_partial).
    if attempt is None or attempt.status not in ("fixed", "partial") or not attempt.files:
        log.warning("publish.nothing", status=attempt.status if attempt else None)
        set_outcome("nothing_to_publish")
        return "nothing_to_publish"
    if attempt.publish_state == "published":
        log.info("publish.duplicate", pr_number=attempt.pr_number)
        set_outcome("duplicate")
        return "duplicate"
    if not store.begin_publish(attempt_id, stale_after=PUBLISH_STALE_AFTER):
        log.info("publish.in_progress_elsewhere")
        set_outcome("duplicate")
        return "duplicate"
    with closing(deps.github(attempt.installation_id)) as gh:
        return _publish(AttemptRun(deps, gh, attempt, job))


def _publish(run: AttemptRun) -> str:
    store = run.deps.store
    attempt = run.attempt
    summary = attempt_summary(attempt)
    branch = attempt.branch or branch_name("attempt", str(attempt.id))
    base = attempt.base_branch or attempt.head_branch
    try:
        if attempt.head_sha is None or base is None:
            raise ValueError("the attempt has no head commit or base branch to publish against")
        commit = run.gh.push_branch(
            attempt.repo, branch, attempt.head_sha, attempt.files or {}, _commit_message(attempt)
        )
        pr = run.gh.open_or_update_pr(
            attempt.repo, branch, base, render.pr_title(summary), render.pr_body(summary)
        )
        store.record_pr(
            repo=attempt.repo,
            number=pr.number,
            url=pr.url,
            branch=branch,
            attempt_id=attempt.id,
            head_sha=commit,
        )
        run.update(publish_state="published", pr_number=pr.number, pr_url=pr.url)
    except Exception as exc:
        run.update(publish_state="failed")
        run.event("error", f"publishing failed (will retry): {type(exc).__name__}: {exc}")
        log.error("publish.failed", error=f"{type(exc).__name__}: {exc}"[:300])
        run.tell(
            "ARCS found a fix but could not open the pull request yet",
            f"Attempt #{attempt.id}: publishing failed ({type(exc).__name__}); ARCS will try again.",
            conclusion="neutral",
        )
        raise
    verb = "opened" if pr.created else "updated"
    said = f"Attempt #{attempt.id} {verb} #{pr.number} ({pr.url}) on branch `{branch}`."
    check = render.check_run_output("completed", summary, pr_url=pr.url)
    check["summary"] = render.truncate(f"{said}\n\n{check['summary']}", render.MAX_CHECK_TEXT)
    run.tell(
        f"ARCS {verb} a pull request with a fix",
        said,
        conclusion="success",
        check=check,
        comment_body=render.status_comment(
            "pr_opened" if pr.created else "pr_updated",
            attempt_id=attempt.id,
            pr_url=f"#{pr.number} ({pr.url})",
        ),
    )
    set_outcome("published", pr_number=pr.number)
    log.info("publish.done", pr_number=pr.number, created=pr.created, branch=branch)
    return "published"


def _commit_message(attempt: AttemptView) -> str:
    what = f"#{attempt.issue_number}" if attempt.trigger == "issue" else (attempt.failure_class or "CI")
    return f"ARCS: fix {what} failure\n\nAttempt #{attempt.id} ({attempt.verdict or 'fixed'}).\n"


def record_pr_outcome(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """A pull request was closed: record merged/closed for the ones ARCS opened (idempotent)."""
    msg = job.expect(RecordPrOutcome)
    repo, number, merged = msg.repo, msg.number, msg.merged
    when = msg.merged_at if merged else msg.closed_at
    state = "merged" if merged else "closed"
    if not deps.store.set_pr_state(repo, number, state, at=when):
        log.info("pr.not_ours", number=number)
        set_outcome("not_ours")
        return "not_ours"
    log.info("pr.outcome", number=number, state=state)
    set_outcome(state)
    return state
