"""``workflow_run`` completed with a failure (GitHub Actions) -> a CI repair job.

Refused here, because the payload says enough: runs that did not fail, runs from forks (their
code is untrusted and must never run with the installation's credentials; ``head_repository``
differs from ``repository``), and runs with no head branch. Left to the worker, because it needs
the API: the watched branches of ``.arcs.yml`` (every branch by default) and the retry cap on
ARCS's own ``arcs/*`` branches (marked with ``retry_of``).

A run on ARCS's own ``arcs/*`` branch also becomes a ``watch_checks`` job
(:mod:`bot.handlers.checks_watch`): held for approval (``action_required``, at ``requested`` or
``completed``), passed or failed, its pull request's status comment says so.
"""

from __future__ import annotations

from bot.handlers.checks_watch import watch
from bot.handlers.views import WorkflowRunCompleted
from bot.routing import ARCS_BRANCH_PREFIX, Decision, RouteContext, Router, enqueue, ignore
from jobs.messages import CiRef, Envelope, RepairCiFailure
from jobs.ports import is_bot_account

router = Router("workflow_run")

REPAIRABLE_CONCLUSIONS = frozenset({"failure"})
"""Only real failures: ``timed_out``, ``cancelled`` and ``startup_failure`` are not code defects."""


def _watch(event: WorkflowRunCompleted, ctx: RouteContext) -> Envelope | None:
    run = event.workflow_run
    head = run.head_repository
    return watch(
        ctx,
        repo=event.repository.full_name,
        same_repo=head is not None and head.id == event.repository.id,
        source="workflow_run",
        ident=run.id,
        head_sha=run.head_sha,
        head_branch=run.head_branch,
        status=run.status,
        conclusion=run.conclusion,
        name=run.name,
        html_url=run.html_url,
        pull_requests=tuple(pr.number for pr in run.pull_requests if pr is not None),
    )


@router.on("workflow_run", "requested", view=WorkflowRunCompleted)
def requested(event: WorkflowRunCompleted, ctx: RouteContext) -> Decision:
    """Enqueue ``watch_checks`` for a run on ARCS's branch that waits for approval."""
    job = _watch(event, ctx)
    if job is None:
        return ignore("workflow run requested: only a run on ARCS's branch held for approval is watched")
    return enqueue(job)


@router.on("workflow_run", "completed", view=WorkflowRunCompleted)
def completed(event: WorkflowRunCompleted, ctx: RouteContext) -> Decision:
    """Enqueue ``repair_ci_failure`` for a failed run on a branch of this repository, and
    ``watch_checks`` for a run on ARCS's own branch."""
    decision = _repair(event, ctx)
    job = _watch(event, ctx)
    if job is None:
        return decision
    return enqueue(*decision.jobs, job)


def _person(event: WorkflowRunCompleted) -> str | None:
    """Who the repair counts against (``ARCS_USER_DAILY_USD``): the run's triggering actor (a
    re-run's clicker), else its actor; None for a bot's run (nobody known behind it)."""
    run = event.workflow_run
    who = run.triggering_actor or run.actor
    if who is None or is_bot_account(who.login, who.type):
        return None
    return who.login


def _repair(event: WorkflowRunCompleted, ctx: RouteContext) -> Decision:
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
    message = RepairCiFailure(
        repo=repo,
        installation_id=ctx.installation_id,
        delivery_id=ctx.delivery_id,
        source="workflow_run",
        head_sha=run.head_sha,
        head_branch=branch,
        run_id=run.id,
        workflow_name=run.name,
        pull_requests=tuple(pr.number for pr in run.pull_requests if pr is not None),
        retry_of=branch if branch.startswith(ARCS_BRANCH_PREFIX) else None,
        actor=_person(event),
        ci=CiRef(
            run_attempt=run.run_attempt,
            workflow_id=run.workflow_id,
            check_suite_id=run.check_suite_id,
            html_url=run.html_url,
        ),
    )
    return enqueue(ctx.job(message, key=f"ci:{repo}:workflow_run:{run.id}"))
