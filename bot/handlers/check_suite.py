"""``check_suite`` and ``check_run`` completed with a failure (CI apps other than Actions).

GitHub Actions failures arrive as ``workflow_run`` (richer: logs, attempts), so suites and runs
created by the ``github-actions`` app are ignored here to avoid a second job. A failed check run
and the failed suite that contains it produce the *same* idempotency key
(``ci:{repo}:checks:{app_id}:{head_sha}``), so the worker starts one attempt for both.

Forks: a check suite on a commit from a fork carries no ``head_branch`` and its pull requests
point at another repository; both are refused here. The worker re-verifies that the head commit
belongs to a branch of the base repository before it touches credentials.
"""

from __future__ import annotations

from typing import Any

from bot.handlers.views import CheckPull, CheckRunCompleted, CheckSuiteCompleted
from bot.routing import ARCS_BRANCH_PREFIX, Decision, RouteContext, Router, enqueue, ignore

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
    source: str,
    app_id: int | None,
    app_slug: str | None,
    suite_id: int | None,
    head_sha: str,
    head_branch: str,
    conclusion: str,
    html_url: str | None,
    pull_requests: list[int],
    extra: dict[str, Any],
) -> Decision:
    args: dict[str, Any] = {
        "source": source,
        "check_suite_id": suite_id,
        "app_id": app_id,
        "app_slug": app_slug,
        "head_sha": head_sha,
        "head_branch": head_branch,
        "conclusion": conclusion,
        "html_url": html_url,
        "pull_requests": pull_requests,
        "retry_of": head_branch if head_branch.startswith(ARCS_BRANCH_PREFIX) else None,
        "watched_branches_checked": False,
        **extra,
    }
    return enqueue(ctx.job("repair_ci_failure", args, key=f"ci:{repo}:checks:{app_id}:{head_sha}", repo=repo))


@router.on("check_suite", "completed", view=CheckSuiteCompleted)
def suite_completed(event: CheckSuiteCompleted, ctx: RouteContext) -> Decision:
    """Enqueue ``repair_ci_failure`` for a failed suite of a non-Actions CI app."""
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
        app_id=suite.app.id,
        app_slug=slug,
        suite_id=suite.id,
        head_sha=suite.head_sha,
        head_branch=suite.head_branch,
        conclusion=suite.conclusion or "",
        html_url=None,
        pull_requests=[pr.number for pr in suite.pull_requests],
        extra={},
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
        app_id=app.id if app is not None else None,
        app_slug=slug,
        suite_id=suite.id if suite is not None else None,
        head_sha=run.head_sha,
        head_branch=branch,
        conclusion=run.conclusion or "",
        html_url=run.html_url,
        pull_requests=[pr.number for pr in run.pull_requests],
        extra={"check_run_id": run.id, "check_name": run.name},
    )
