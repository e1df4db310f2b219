"""``watch_checks``: after ARCS pushed a fix, its pull request's status comment says what the
checks on the pushed head do, so a fix never stalls silently.

GitHub holds runs on a bot's branch for approval (``action_required``: "Approve and run") or,
when the push was made with ``GITHUB_TOKEN``, starts none at all. The web side turns
``workflow_run`` / ``check_suite`` events for an ``arcs/`` branch into :class:`WatchChecks`
messages; this job finds the ARCS pull request of that branch in the store and edits one
status comment on it (found by its hidden marker: in place, never a second comment) to one line
about the head: waiting for approval (with the button and the repository setting that unblock
it), passed or failed. An event for a commit that is no longer the pull request's head is
ignored, so an old run can never overwrite the state of the new head.
"""

from __future__ import annotations

import structlog
from structlog.contextvars import bind_contextvars

from jobs import render
from jobs.logctx import set_outcome
from jobs.messages import JobRequest, WatchChecks
from jobs.run import Deps, closing

log = structlog.get_logger("arcs.pipeline")

APPROVE_BUTTON = '"Approve and run"'
"""The button GitHub shows under "Workflow(s) awaiting approval" (the run's page, the PR's
Conversation tab)."""
APPROVAL_SETTINGS = (
    'Settings → Actions → General → "Approval for running fork pull request workflows from '
    'contributors" (public repositories) or "Fork pull request workflows" → "Require approval for '
    'fork pull request workflows" (private ones)'
)
"""Where a repository decides which runs wait for approval (GitHub's docs, "Approving workflow
runs from forks")."""


def checks_marker(number: int) -> str:
    """The hidden marker of the checks status comment on ARCS's pull request ``number``."""
    return render.status_marker(f"checks-pr-{number}")


def checks_line(msg: WatchChecks) -> str:
    """The one line the status comment carries for ``msg`` (untrusted names defused)."""
    sha = f"`{msg.head_sha[:7]}`"
    name = render.defuse(msg.name) if msg.name else "the checks"
    link = f" ([run]({msg.html_url}))" if msg.html_url else ""
    if msg.state == "waiting":
        return (
            f"⏸️ Checks on {sha} wait for approval: {name}{link} is `action_required`. A maintainer "
            f"with write access can press {APPROVE_BUTTON} on the run's page or on this pull "
            "request; runs on a bot's branch need it whenever the repository requires approval "
            f"({APPROVAL_SETTINGS})."
        )
    if msg.state == "passed":
        return f"✅ Checks passed on {sha}: {name}{link}."
    if msg.state == "failed":
        return f"❌ Checks failed on {sha}: {name}{link} concluded `{msg.conclusion or 'failure'}`."
    return f"➖ Checks on {sha}: {name}{link} concluded `{msg.conclusion or 'unknown'}`."


def watch_checks(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """Edit the checks line of the status comment on the ARCS pull request of ``head_branch``."""
    msg = job.expect(WatchChecks)
    pr = deps.store.arcs_pr_for_branch(msg.repo, msg.head_branch)
    if pr is None or pr.state != "open":
        log.info("checks.not_ours", branch=msg.head_branch)
        set_outcome("not_ours")
        return "not_ours"
    bind_contextvars(pr_number=str(pr.number))
    if pr.head_sha is not None and pr.head_sha != msg.head_sha:
        # A run of an older push: the head moved on, and its own events will say how it went.
        log.info("checks.stale", head_sha=msg.head_sha, pr_head=pr.head_sha)
        set_outcome("stale")
        return "stale"
    body = f"{checks_line(msg)}\n\n{checks_marker(pr.number)}"
    with closing(deps.github(msg.installation_id)) as gh:
        gh.create_or_edit_status_comment(msg.repo, pr.number, body)
    log.info("checks.noted", state=msg.state, head_sha=msg.head_sha)
    set_outcome(msg.state)
    return msg.state
