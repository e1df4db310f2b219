"""``workflow_run`` completed with a failure (GitHub Actions) -> a CI repair job.

Refused here, because the payload says enough: runs that did not fail, runs from forks (their
code is untrusted and must never run with the installation's credentials; ``head_repository``
differs from ``repository``), and runs with no head branch. Left to the worker, because it needs
the API: the watched branches of ``.arcs.yml`` (every branch by default) and the retry cap on
ARCS's own ``arcs/*`` branches (marked with ``retry_of``).
"""

from __future__ import annotations

from bot.handlers.views import WorkflowRunCompleted
from bot.routing import ARCS_BRANCH_PREFIX, Decision, RouteContext, Router, enqueue, ignore

router = Router("workflow_run")

REPAIRABLE_CONCLUSIONS = frozenset({"failure"})
"""Only real failures: ``timed_out``, ``cancelled`` and ``startup_failure`` are not code defects."""


@router.on("workflow_run", "completed", view=WorkflowRunCompleted)
def completed(event: WorkflowRunCompleted, ctx: RouteContext) -> Decision:
    """Enqueue ``repair_ci_failure`` for a failed run on a branch of this repository."""
    run = event.workflow_run
    if run.conclusion not in REPAIRABLE_CONCLUSIONS:
        return ignore(f"workflow run concluded {run.conclusion or 'without a conclusion'}")
    head = run.head_repository
    if head is None:
        return ignore(f"workflow run {run.id} has no head repository (a deleted fork): never repaired")
    if head.id != event.repository.id:
        return ignore(
            f"workflow run {run.id} comes from the fork {head.full_name or head.id}: "
            "fork code is never repaired with credentials"
        )
    branch = run.head_branch
    if not branch:
        return ignore(f"workflow run {run.id} has no head branch")
    repo = event.repository.full_name
    return enqueue(
        ctx.job(
            "repair_ci_failure",
            {
                "source": "workflow_run",
                "run_id": run.id,
                "run_attempt": run.run_attempt,
                "workflow_id": run.workflow_id,
                "workflow_name": run.name,
                "check_suite_id": run.check_suite_id,
                "head_sha": run.head_sha,
                "head_branch": branch,
                "conclusion": run.conclusion,
                "html_url": run.html_url,
                "pull_requests": [pr.number for pr in run.pull_requests if pr is not None],
                "retry_of": branch if branch.startswith(ARCS_BRANCH_PREFIX) else None,
                "watched_branches_checked": False,
            },
            key=f"ci:{repo}:workflow_run:{run.id}",
            repo=repo,
        )
    )
