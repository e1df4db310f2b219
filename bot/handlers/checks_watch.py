"""The checks on ARCS's own pushed heads -> ``watch_checks`` (issue #28: never stall silently).

A ``workflow_run`` or ``check_suite`` on an ``arcs/`` branch of this repository (a fork can name
a branch ``arcs/…`` too, so the head repository must be this one) becomes a
:class:`~jobs.messages.WatchChecks` job: the worker finds ARCS's pull request for the branch and
edits its status comment (waiting for approval, passed, failed). Not a router of its own: the
``workflow_run`` and ``check_suite`` handlers call :func:`watch` beside their repair decision (one
route per event and action).
"""

from __future__ import annotations

from bot.routing import ARCS_BRANCH_PREFIX, RouteContext
from jobs.messages import ChecksState, CiSource, Envelope, WatchChecks

WAITING = "action_required"
"""GitHub's status and conclusion of a run held for approval ("Approve and run")."""
FAILED = frozenset({"failure", "timed_out", "startup_failure"})


def checks_state(status: str | None, conclusion: str | None) -> ChecksState | None:
    """What the run's ``status``/``conclusion`` mean for ARCS's pull request (``None``: nothing
    to say yet, e.g. queued or in progress)."""
    if WAITING in (status, conclusion):
        return "waiting"
    if status != "completed" or conclusion is None:
        return None
    if conclusion == "success":
        return "passed"
    return "failed" if conclusion in FAILED else "other"


def watch(
    ctx: RouteContext,
    *,
    repo: str,
    same_repo: bool,
    source: CiSource,
    ident: int,
    head_sha: str,
    head_branch: str | None,
    status: str | None,
    conclusion: str | None,
    name: str | None,
    html_url: str | None,
    pull_requests: tuple[int, ...],
) -> Envelope | None:
    """The ``watch_checks`` job for a run or suite on ARCS's branch, or ``None`` (not ARCS's
    branch, a fork's, or a state with nothing to say)."""
    if not same_repo or not head_branch or not head_branch.startswith(ARCS_BRANCH_PREFIX):
        return None
    state = checks_state(status, conclusion)
    if state is None:
        return None
    message = WatchChecks(
        repo=repo,
        installation_id=ctx.installation_id,
        delivery_id=ctx.delivery_id,
        head_sha=head_sha,
        head_branch=head_branch,
        state=state,
        pull_requests=pull_requests,
        source=source,
        name=name,
        html_url=html_url,
        conclusion=conclusion,
    )
    return ctx.job(message, key=f"checks:{repo}:{source}:{ident}:{state}")
