"""Publishing: a fixed attempt becomes a branch and a pull request (the ``publish_result`` job),
and what became of ARCS' pull requests is recorded (the ``record_pr_outcome`` job).

``publish_result`` publishes once: the branch name is a function of what is repaired, the gateway
updates an open pull request for the branch instead of opening a second one, and
:meth:`jobs.ports.AttemptStore.begin_publish` lets only one worker publish at a time. It raises on
failure so the queue retries it. The pull request's text comes from the stored attempt alone
(its :class:`jobs.repair.report.RepairReport`: :func:`jobs.report_summary.attempt_summary` ->
:mod:`jobs.render`). ``draft`` and labels are the gateway's business: the App's gateway reads
them from ``.arcs.yml`` on the default branch.

A ``no_fix`` attempt whose report carries a verified revert of the culprit
(``.arcs.yml`` ``on_no_fix: revert``, :class:`jobs.repair.report.RevertResult`) publishes that revert
instead: branch ``arcs/revert/<sha7>``, the same gateway call (draft, labels, one pull request per
branch), the pull-request limits checked again (a ``no_fix`` attempt no longer counts as one that
may still open a pull request), and never on a pull request's branch (:func:`jobs.revert_pr.revert_refusal`,
checked here against the repository's default branch whatever the worker decided).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import structlog
from structlog.contextvars import bind_contextvars

from jobs import render, revert_pr
from jobs.admission import count_arcs_prs, pr_limit_reached, updates_open_pr
from jobs.attempt import load_config
from jobs.auto_apply import for_pull_request, try_auto_apply, try_update_commit
from jobs.branches import branch_name
from jobs.checks_watch import schedule_probe
from jobs.config import ArcsConfig
from jobs.dashboard_schedule import schedule_dashboard
from jobs.logctx import set_outcome
from jobs.messages import JobRequest, PublishResult, RecordPrOutcome
from jobs.policy import merge
from jobs.ports import AttemptView, PullRequestRef
from jobs.repair.report import RepairReport
from jobs.report_summary import attempt_summary, stored_report
from jobs.run import AttemptRun, Deps, closing
from runners.errors import ConfigError

log = structlog.get_logger("arcs.pipeline")

PUBLISH_STALE_AFTER = dt.timedelta(minutes=15)
"""A ``publishing`` claim older than this belongs to a dead worker and can be taken over."""


def publish_result(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """Push the fix of a ``fixed`` attempt to its branch and open (or update) its pull request."""
    msg = job.expect(PublishResult)
    attempt_id = msg.attempt_id
    bind_contextvars(attempt_id=str(attempt_id))
    store = deps.store
    attempt = store.get_attempt(attempt_id)
    reverting = _pending_revert(attempt)
    # `partial` attempts carry files only when `.arcs.yml` asked for a pull request (open_pr_on_partial).
    if attempt is None or (
        reverting is None and (attempt.status not in ("fixed", "partial") or not attempt.files)
    ):
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
        run = AttemptRun(deps, gh, attempt, job)
        try:
            return _publish(run) if reverting is None else _publish_revert(run, reverting)
        finally:  # the dashboard issue lists the new pull request (when .arcs.yml wants one)
            if msg.dashboard:
                schedule_dashboard(
                    deps.enqueue,
                    deps.enqueue_later,
                    deps.clock(),
                    job.context,
                    repo=attempt.repo,
                    installation_id=attempt.installation_id,
                )


def _push_and_open(
    run: AttemptRun,
    branch: str,
    base: str,
    files: Mapping[str, str | None],
    message: str,
    title: str,
    body: str,
) -> PullRequestRef:
    """Push ``files`` onto the attempt's head as ``branch``, open (or update) its pull request
    against ``base`` and record it with the attempt."""
    attempt = run.attempt
    assert attempt.head_sha is not None  # the callers checked
    commit = run.gh.push_branch(attempt.repo, branch, attempt.head_sha, dict(files), message)
    pr = run.gh.open_or_update_pr(attempt.repo, branch, base, title, body)
    run.deps.store.record_pr(
        repo=attempt.repo, number=pr.number, url=pr.url, branch=branch, attempt_id=attempt.id, head_sha=commit
    )
    run.update(publish_state="published", pr_number=pr.number, pr_url=pr.url)
    # Checks that never start send no event: a delayed probe says so (jobs.checks_watch).
    schedule_probe(
        run.deps,
        run.job.context,
        repo=attempt.repo,
        installation_id=attempt.installation_id,
        branch=branch,
        sha=commit,
    )
    return pr


def _pending_revert(attempt: AttemptView | None) -> RepairReport | None:
    """The stored report of a ``no_fix`` attempt that carries a revert to publish (else None)."""
    if attempt is None or attempt.status != "no_fix":
        return None
    report = stored_report(attempt)
    return report if report.revert is not None and report.revert.files else None


def _auto_apply(run: AttemptRun) -> str | None:
    """``auto_apply`` and a dependency update's commit (:mod:`jobs.auto_apply`), asked only for a
    fix of a pull request's branch;
    ``.arcs.yml`` is the default branch's (a malformed one applies nothing)."""
    if not for_pull_request(run.attempt):
        return None
    try:
        config = load_config(run.gh, run.repo, None)
    except ConfigError:
        return None
    except Exception as exc:  # the default publishing does not need it
        run.event("error", f"auto_apply: could not read .arcs.yml: {type(exc).__name__}: {exc}")
        return None
    # A red dependency update's migration goes on the update's own branch when .arcs.yml says so.
    return try_update_commit(run, config) or try_auto_apply(run, config)


def _publish(run: AttemptRun) -> str:
    applied = _auto_apply(run)
    if applied is not None:
        return applied
    attempt = run.attempt
    summary = attempt_summary(attempt)
    branch = attempt.branch or branch_name("attempt", str(attempt.id))
    base = attempt.base_branch or attempt.head_branch
    try:
        if attempt.head_sha is None or base is None:
            raise ValueError("the attempt has no head commit or base branch to publish against")
        pr = _push_and_open(
            run,
            branch,
            base,
            attempt.files or {},
            _commit_message(attempt),
            render.pr_title(summary),
            render.pr_body(summary),
        )
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


def _revert_limit(run: AttemptRun, config: ArcsConfig, branch: str) -> str | None:
    """The pull-request limits of admission (:mod:`jobs.admission`), for a revert about to open a
    new pull request: a reason when one is reached, else None."""
    store = run.deps.store
    if updates_open_pr(store, run.repo, branch):
        return None
    owner = run.attempt.owner or run.repo.split("/", 1)[0]
    owner_row, repo_row = store.policy_rows(owner, run.repo)
    policy = merge(owner, run.repo, owner_row, repo_row, config_max_prs_per_day=config.max_prs_per_day)
    reached = pr_limit_reached(
        config, count_arcs_prs(store, run.repo, run.deps.clock()), run.repo, policy=policy
    )
    return None if reached is None else reached[1].removesuffix("; skipping this repair")


def _revert_refused(run: AttemptRun, report: RepairReport, why: str) -> str:
    """No revert pull request: a ``refusal`` event, and the check run says why (not retried)."""
    run.update(publish_state="refused")
    run.event("refusal", f"no revert pull request: {why}", policy="on_no_fix")
    log.warning("publish.revert_refused", reason=why[:300])
    summary = attempt_summary(run.attempt, fixed=False, report=report)
    check = render.check_run_output("completed", summary, reason=run.attempt.reason or "no verified fix")
    said = f"Attempt #{run.attempt.id}: no revert pull request was opened: {render.defuse(why)}."
    check["summary"] = render.truncate(f"{said}\n\n{check['summary']}", render.MAX_CHECK_TEXT)
    run.tell("ARCS did not open a revert", said, conclusion="neutral", check=check, comment=False)
    set_outcome("revert_refused")
    return "revert_refused"


def _publish_revert(run: AttemptRun, report: RepairReport) -> str:
    """Push the verified revert of the culprit to ``arcs/revert/<sha7>`` and open (or update) its
    pull request against the default branch: only there, only for a CI failure outside any pull
    request, only when ``.arcs.yml`` on the default branch still says ``on_no_fix: revert`` and the
    pull-request limits allow it."""
    attempt = run.attempt
    revert = report.revert
    assert revert is not None  # _pending_revert
    default = run.gh.get_branch_head(attempt.repo).name
    why = revert_pr.revert_refusal(
        revert,
        trigger=attempt.trigger,
        head_branch=attempt.head_branch,
        base_branch=attempt.base_branch,
        pull_request=attempt.issue_number,
        default_branch=default,
    )
    branch = revert_pr.revert_branch(revert.sha)
    if why is None:
        try:
            config = load_config(run.gh, attempt.repo, None)
        except ConfigError as exc:
            config, why = ArcsConfig(), f"`.arcs.yml` on `{default}` is malformed ({exc})"
        if why is None and config.on_no_fix != "revert":
            why = f"`.arcs.yml` on `{default}` does not say `on_no_fix: revert`"
        why = why or _revert_limit(run, config, branch)
    if why is not None or attempt.head_sha is None:
        return _revert_refused(run, report, why or "the attempt has no head commit")
    summary = attempt_summary(attempt, fixed=False, report=report)
    title = revert_pr.revert_title(revert, report.culprit)
    try:
        pr = _push_and_open(
            run,
            branch,
            default,
            dict(revert.files),
            revert_pr.revert_commit_message(revert, report.culprit, attempt_id=attempt.id),
            title,
            revert_pr.revert_body(summary, revert, base=default),
        )
    except Exception as exc:
        run.update(publish_state="failed")
        run.event("error", f"publishing the revert failed (will retry): {type(exc).__name__}: {exc}")
        log.error("publish.failed", error=f"{type(exc).__name__}: {exc}"[:300])
        raise
    verb = "opened" if pr.created else "updated"
    said = f"Attempt #{attempt.id} {verb} #{pr.number} ({pr.url}), a revert of {revert.sha[:7]}, on branch `{branch}`."
    check = render.check_run_output("completed", summary, reason=attempt.reason or "no verified fix")
    check["title"] = render.truncate(f"Revert proposed: {title}", render.MAX_CHECK_TITLE, note="…")
    check["summary"] = render.truncate(f"{said}\n\n{check['summary']}", render.MAX_CHECK_TEXT)
    run.tell(f"ARCS {verb} a revert pull request", said, conclusion="neutral", check=check, comment=False)
    set_outcome("published_revert", pr_number=pr.number)
    log.info("publish.revert", pr_number=pr.number, created=pr.created, branch=branch)
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
