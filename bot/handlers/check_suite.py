"""``check_suite`` and ``check_run`` completed with a failure (CI apps other than Actions).

GitHub Actions failures arrive as ``workflow_run`` (richer: logs, attempts), so suites and runs
created by the ``github-actions`` app are ignored here to avoid a second job. A failed check run
and the failed suite that contains it produce the *same* idempotency key
(``ci:{repo}:checks:{app_id}:{head_sha}``), so the worker starts one attempt for both.

Forks: a check suite on a commit from a fork carries no ``head_branch`` and its pull requests
point at another repository; both are refused here. The worker re-verifies that the head commit
belongs to a branch of the base repository before it touches credentials.

A completed suite on ARCS's own ``arcs/*`` branch also becomes a ``watch_checks`` job
(:mod:`bot.handlers.checks_watch`): one held for approval (``action_required``, any app), or the
result of a non-Actions app (Actions results come through ``workflow_run``).
"""

from __future__ import annotations

from bot.handlers.checks_watch import WAITING, watch
from bot.handlers.views import CheckPull, CheckRunCompleted, CheckSuiteCompleted
from bot.routing import ARCS_BRANCH_PREFIX, Decision, RouteContext, Router, enqueue, ignore
from jobs.messages import CiRef, CiSource, RepairCiFailure

router = Router("check_suite")

ACTIONS_APP_SLUG = "github-actions"
REPAIRABLE_CONCLUSIONS = frozenset({"failure"})


def _fork_pull(pulls: list[CheckPull], repo_id: int) -> bool:
    # A pull request whose head lives in another repository is a fork's.
    return any(pr.head.repo.id != repo_id or pr.base.repo.id != repo_id for pr in pulls)


def _common(
    ctx: RouteContext,
    *,
    repo: str,
    source: CiSource,
    head_sha: str,
    head_branch: str,
    pull_requests: list[int],
    ci: CiRef,
) -> Decision:
    message = RepairCiFailure(
        repo=repo,
        installation_id=ctx.installation_id,
        delivery_id=ctx.delivery_id,
        source=source,
        head_sha=head_sha,
        head_branch=head_branch,
        pull_requests=tuple(pull_requests),
        retry_of=head_branch if head_branch.startswith(ARCS_BRANCH_PREFIX) else None,
        ci=ci,
    )
    return enqueue(ctx.job(message, key=f"ci:{repo}:checks:{ci.app_id}:{head_sha}"))


@router.on("check_suite", "completed", view=CheckSuiteCompleted)
def suite_completed(event: CheckSuiteCompleted, ctx: RouteContext) -> Decision:
    """Enqueue ``repair_ci_failure`` for a failed suite of a non-Actions CI app, and
    ``watch_checks`` for a suite on ARCS's own branch."""
    decision = _repair_suite(event, ctx)
    suite = event.check_suite
    if suite.app.slug == ACTIONS_APP_SLUG and WAITING not in (suite.status, suite.conclusion):
        return decision  # Actions results: workflow_run says them (with the workflow's name)
    job = watch(
        ctx,
        repo=event.repository.full_name,
        same_repo=not _fork_pull(suite.pull_requests, event.repository.id),
        source="check_suite",
        ident=suite.id,
        head_sha=suite.head_sha,
        head_branch=suite.head_branch,
        status=suite.status,
        conclusion=suite.conclusion,
        name=suite.app.slug,
        html_url=None,
        pull_requests=tuple(pr.number for pr in suite.pull_requests),
    )
    return decision if job is None else enqueue(*decision.jobs, job)


def _repair_suite(event: CheckSuiteCompleted, ctx: RouteContext) -> Decision:
    suite = event.check_suite
    slug = suite.app.slug
    if suite.conclusion not in REPAIRABLE_CONCLUSIONS:
        return ignore(f"check suite concluded {suite.conclusion or 'without a conclusion'}")
    if slug == ACTIONS_APP_SLUG:
        return ignore("GitHub Actions suites are handled through workflow_run")
    if _fork_pull(suite.pull_requests, event.repository.id):
        return ignore(f"check suite {suite.id} belongs to a fork's pull request: never repaired")
    if not suite.head_branch:
        return ignore(f"check suite {suite.id} has no head branch (a fork or a detached commit)")
    return _common(
        ctx,
        repo=event.repository.full_name,
        source="check_suite",
        head_sha=suite.head_sha,
        head_branch=suite.head_branch,
        pull_requests=[pr.number for pr in suite.pull_requests],
        ci=CiRef(check_suite_id=suite.id, app_id=suite.app.id, app_slug=slug),
    )


@router.on("check_run", "completed", view=CheckRunCompleted)
def run_completed(event: CheckRunCompleted, ctx: RouteContext) -> Decision:
    """Enqueue ``repair_ci_failure`` for a failed check run of a non-Actions CI app."""
    run = event.check_run
    app = run.app
    slug = app.slug if app is not None else None
    if run.conclusion not in REPAIRABLE_CONCLUSIONS:
        return ignore(f"check run concluded {run.conclusion or 'without a conclusion'}")
    if slug == ACTIONS_APP_SLUG:
        return ignore("GitHub Actions check runs are handled through workflow_run")
    if _fork_pull(run.pull_requests, event.repository.id):
        return ignore(f"check run {run.id} belongs to a fork's pull request: never repaired")
    suite = run.check_suite
    branch = suite.head_branch if suite is not None else None
    if not branch:
        return ignore(f"check run {run.id} has no head branch (a fork or a detached commit)")
    return _common(
        ctx,
        repo=event.repository.full_name,
        source="check_run",
        head_sha=run.head_sha,
        head_branch=branch,
        pull_requests=[pr.number for pr in run.pull_requests],
        ci=CiRef(
            check_suite_id=suite.id if suite is not None else None,
            check_run_id=run.id,
            check_name=run.name,
            app_id=app.id if app is not None else None,
            app_slug=slug,
            html_url=run.html_url,
        ),
    )
