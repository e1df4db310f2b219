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

Checks that never start send no event at all, so publishing schedules a delayed ``probe``
(:func:`schedule_probe`, ``ARCS_CHECKS_GRACE_S`` after the push; dramatiq delays it, no worker
sleeps): it asks GitHub what started on the pushed head and, when nothing did, says so (or that a
run waits for approval, when that event was missed).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import replace

import structlog
from structlog.contextvars import bind_contextvars

from jobs import render
from jobs.logctx import set_outcome
from jobs.messages import Envelope, JobRequest, WatchChecks
from jobs.ports import GitHubGateway
from jobs.run import CHECK_NAME, Deps, closing

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
    if msg.state == "probe":
        return (
            f"⚠️ No checks started for {sha} since ARCS pushed it. Pushes made with `GITHUB_TOKEN` "
            "start no workflows (the ARCS App pushes with its installation token; the Action needs a "
            "personal access token or a GitHub App token, see ARCS's README); also check that the "
            "workflows' `on:` triggers match `pull_request` or the `arcs/` branch, and that Actions "
            "are enabled (Settings → Actions → General)."
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
    with closing(deps.github(msg.installation_id)) as gh:
        if msg.state == "passed":
            msg = _unless_another_holds(gh, msg)
        if msg.state == "probe":
            said = _probe(gh, msg)
            if said is None:
                log.info("checks.started", head_sha=msg.head_sha)
                set_outcome("started")
                return "started"
            msg = said
        body = f"{checks_line(msg)}\n\n{checks_marker(pr.number)}"
        gh.create_or_edit_status_comment(msg.repo, pr.number, body)
    outcome = "never_started" if msg.state == "probe" else msg.state
    log.info("checks.noted", state=outcome, head_sha=msg.head_sha)
    set_outcome(outcome)
    return outcome


_WAITING = "action_required"
_RED = frozenset({"failure", "timed_out", "startup_failure"})


def _unless_another_holds(gh: GitHubGateway, msg: WatchChecks) -> WatchChecks:
    """A passed run says "passed" only when no other run on the head still waits for approval or
    failed: one workflow's success must not hide another's gate (its line is said instead)."""
    seen = gh.checks_on(msg.repo, msg.head_sha)
    for run in seen.runs:
        if _WAITING in (run.status, run.conclusion):
            return replace(msg, state="waiting", name=run.name, html_url=run.html_url, conclusion=None)
    for run in seen.runs:
        if run.conclusion in _RED:
            return replace(
                msg, state="failed", name=run.name, html_url=run.html_url, conclusion=run.conclusion
            )
    return msg


def _probe(gh: GitHubGateway, msg: WatchChecks) -> WatchChecks | None:
    """What to say once the grace period ended: ``msg`` itself (nothing started), a waiting
    run's note (its event was missed), or ``None`` (checks run: their events will tell)."""
    seen = gh.checks_on(msg.repo, msg.head_sha)
    for run in seen.runs:
        if _WAITING in (run.status, run.conclusion):
            return replace(msg, state="waiting", name=run.name, html_url=run.html_url)
    others = [name for name in seen.check_runs if name != CHECK_NAME]  # ARCS's own is no CI
    if seen.runs or others:
        return None
    return msg


def schedule_probe(
    deps: Deps, context: Mapping[str, str], *, repo: str, installation_id: int | None, branch: str, sha: str
) -> None:
    """Send the delayed ``probe`` of ARCS's push of ``sha`` to ``branch`` (``ARCS_CHECKS_GRACE_S``;
    0 or a worker that cannot delay: none). A failure to send is logged: the push stands."""
    later = deps.enqueue_later
    grace = float(deps.settings.checks_grace_s)
    if later is None or grace <= 0:
        return
    message = WatchChecks(
        repo=repo, installation_id=installation_id, head_sha=sha, head_branch=branch, state="probe"
    )
    job = Envelope.of(message, context=dict(context), idempotency_key=f"checks-probe:{repo}:{sha}")
    try:
        later(job, dt.timedelta(seconds=grace))
    except Exception as exc:
        log.warning("checks.probe_not_sent", error=f"{type(exc).__name__}: {exc}"[:300])
