"""``.arcs.yml`` ``auto_apply``: chosen fix kinds committed straight to the pull request's branch.

Asked by :func:`jobs.publish.publish_result` before it opens a fix pull request. A ``fixed``
attempt is committed on top of the pull request's own branch, instead of published as a pull
request into it, when all of these hold (else it is published as by default, and when
``auto_apply`` is set an ``auto_apply`` notice event says why not):

* the repair is for a pull request of this repository (a CI failure on its branch or ``/arcs fix``
  on it: the fix's base is the pull request's head branch, never ARCS's own ``arcs/`` branch);
* ``auto_apply`` in ``.arcs.yml`` **on the default branch** names the fix's kind
  (:mod:`jobs.fix_kind`): a pull request cannot grant itself the right by editing its own file;
* the person the repair counts for (:func:`jobs.admission.triggering_user`: a command's author, a
  button's clicker, a workflow run's triggering actor) has write permission: the rule of
  :meth:`jobs.run.AttemptRun.check_permission`; a bot account or an unknown person never does;
* the pull request is open, not from a fork, and its head is still the commit the fix was made on;
* the push is a fast-forward of that head (:meth:`jobs.ports.GitHubGateway.commit_on_top`): when
  someone pushed meanwhile or branch protection refuses it, the fix pull request is opened instead.

A red dependency update's fix (#27, :func:`try_update_commit`) is committed to the update's own
branch under the same last three rules, but in place of a writer it asks for explicit
configuration and an update bot's pull request (Dependabot, Renovate): their pull requests have no
person behind them, and a ``[bot]`` login grants nothing else.
"""

from __future__ import annotations

from typing import Final

import structlog

from jobs import render
from jobs.admission import triggering_user
from jobs.branches import BRANCH_PREFIX
from jobs.config_model import ArcsConfig, FixKind
from jobs.fix_kind import read_fix_kind
from jobs.logctx import set_outcome
from jobs.ports import WRITE_PERMISSIONS, AttemptView, is_bot_account
from jobs.report_summary import attempt_summary, stored_report
from jobs.run import AttemptRun

log = structlog.get_logger("arcs.pipeline")

__all__ = ["APPLIED", "UPDATE_BOTS", "for_pull_request", "try_auto_apply", "try_update_commit"]

APPLIED: Final = "applied"
"""``publish_result``'s outcome when the fix was committed to the pull request's branch."""
KIND_NAMES: Final[dict[str, str]] = {
    "format": "a formatter's fix",
    "lint": "a linter's fix",
    "template": "a tier-0 template fix",
    "revert": "a revert of the lines that broke",
    "llm": "a model's fix",
}

UPDATE_BOTS: Final[dict[str, str]] = {"dependabot[bot]": "dependabot/", "renovate[bot]": "renovate/"}
"""The dependency-update bots whose pull requests may get a migration committed (#27), and the
branch prefix each pushes: the pull request's author and its head branch must both match."""


def for_pull_request(attempt: AttemptView) -> bool:
    """The attempt repaired a pull request's own branch (so its fix could go straight there)."""
    head = attempt.head_branch
    return (
        attempt.status == "fixed"
        and attempt.trigger in ("ci", "comment")
        and attempt.issue_number is not None
        and bool(attempt.head_sha)
        and bool(head)
        and not str(head).startswith(BRANCH_PREFIX)
        and attempt.base_branch == head
        and bool(attempt.files)
    )


def _not_applied(run: AttemptRun, why: str, kind: FixKind | None) -> None:
    run.event("notice", f"auto_apply: published as a pull request: {why}", policy="auto_apply", fix_kind=kind)
    log.info("publish.auto_apply_skipped", reason=why[:200], kind=kind)


def try_auto_apply(run: AttemptRun, config: ArcsConfig) -> str | None:
    """Commit the attempt's fix on top of its pull request's branch when ``config`` (the default
    branch's ``.arcs.yml``) asks for its kind (see the module docstring): :data:`APPLIED`, or None
    to publish as by default. Errors before the push fall back to the default, recorded."""
    attempt = run.attempt
    if not config.auto_apply or not for_pull_request(attempt):
        return None
    kind = read_fix_kind(stored_report(attempt).trace_path, run.deps.settings.traces_dir)
    if kind is None or kind not in config.auto_apply:
        _not_applied(run, f"the fix's kind ({kind or 'unknown'}) is not in `auto_apply`", kind)
        return None
    login = triggering_user(attempt.requested_by)
    assert attempt.issue_number is not None and attempt.head_branch and attempt.head_sha  # for_pull_request
    number, branch, head = attempt.issue_number, attempt.head_branch, attempt.head_sha
    try:
        if login is None or is_bot_account(login):
            _not_applied(run, "no person with write access is behind this repair", kind)
            return None
        permission = run.gh.get_permission(run.repo, login)
        if permission not in WRITE_PERMISSIONS:
            _not_applied(run, f"@{login} has {permission} permission; write is needed", kind)
            return None
        pr = run.gh.get_pull_request(run.repo, number)
        if pr.state != "open" or pr.head_repo not in (None, run.repo) or pr.head_branch != branch:
            _not_applied(run, f"#{number} is not an open pull request of {run.repo} on `{branch}`", kind)
            return None
        if pr.head_sha != head:
            _not_applied(run, f"`{branch}` moved on from {head[:7]} to {pr.head_sha[:7]}", kind)
            return None
        sha = run.gh.commit_on_top(run.repo, branch, head, dict(attempt.files or {}), _message(attempt, kind))
    except Exception as exc:  # the default publishing still works without this
        run.event("error", f"auto_apply failed, publishing as a pull request: {type(exc).__name__}: {exc}")
        log.warning("publish.auto_apply_failed", error=f"{type(exc).__name__}: {exc}"[:300])
        return None
    if sha is None:
        _not_applied(run, f"`{branch}` moved or refused the push", kind)
        return None
    run.update(publish_state="published")
    run.event(
        "notice",
        f"auto_apply: {kind} fix committed to {branch} as {sha[:12]}",
        policy="auto_apply",
        fix_kind=kind,
        commit=sha,
        branch=branch,
        pull_request=number,
    )
    said = (
        f"Attempt #{attempt.id} committed {KIND_NAMES[kind]} to `{branch}` as {sha[:7]} "
        f"(`auto_apply: {kind}` in `.arcs.yml`, asked by @{login})."
    )
    run.tell(
        "ARCS committed the fix to the pull request",
        said,
        conclusion="success",
        comment_body=f"{said}\n\n{render.status_marker(attempt.id)}",
    )
    set_outcome(APPLIED, commit=sha, kind=kind)
    log.info("publish.auto_applied", branch=branch, commit=sha[:12], kind=kind)
    return APPLIED


def try_update_commit(run: AttemptRun, config: ArcsConfig) -> str | None:
    """A fix of a red dependency update (#27) committed on top of the update's own branch:
    :data:`APPLIED`, or None to publish as by default (a pull request stacked on the update).

    The bot's pull request has no person behind it, so instead of a writer's permission this
    asks for explicit configuration: ``dependency_updates: fix`` written in ``.arcs.yml`` on the
    default branch (``config``; the default value does not count), a pull request authored by
    one of :data:`UPDATE_BOTS` from that bot's branch, open, not from a fork, its head still the
    commit the fix was made on, and a fast-forward push (:meth:`GitHubGateway.commit_on_top`)."""
    attempt = run.attempt
    update = stored_report(attempt).dependency if for_pull_request(attempt) else None
    if update is None or update.mode != "fix":
        return None
    if config.dependency_updates != "fix" or "dependency_updates" not in config.model_fields_set:
        _not_update(run, "`dependency_updates: fix` is not written in `.arcs.yml` on the default branch")
        return None
    assert attempt.issue_number is not None and attempt.head_branch and attempt.head_sha  # for_pull_request
    number, branch, head = attempt.issue_number, attempt.head_branch, attempt.head_sha
    try:
        pr = run.gh.get_pull_request(run.repo, number)
        prefix = UPDATE_BOTS.get((pr.author or "").casefold())
        if prefix is None or not branch.startswith(prefix):
            _not_update(run, f"#{number} is not a Dependabot or Renovate pull request from its own branch")
            return None
        if pr.state != "open" or pr.head_repo not in (None, run.repo) or pr.head_branch != branch:
            _not_update(run, f"#{number} is not an open pull request of {run.repo} on `{branch}`")
            return None
        if pr.head_sha != head:
            _not_update(run, f"`{branch}` moved on from {head[:7]} to {pr.head_sha[:7]}")
            return None
        message = (
            f"ARCS: migrate the code to the dependency update\n\nAttempt #{attempt.id} ({update.title}).\n"
        )
        sha = run.gh.commit_on_top(run.repo, branch, head, dict(attempt.files or {}), message)
    except Exception as exc:  # the stacked pull request still works without this
        run.event(
            "error",
            f"dependency update: commit failed, publishing as a pull request: {type(exc).__name__}: {exc}",
        )
        return None
    if sha is None:
        _not_update(run, f"`{branch}` moved or refused the push")
        return None
    run.update(publish_state="published")
    run.event(
        "notice",
        f"dependency_updates: fix committed to {branch} as {sha[:12]}",
        policy="dependency_updates",
        commit=sha,
        branch=branch,
        pull_request=number,
    )
    said = (
        f"Attempt #{attempt.id} committed the migration to `{branch}` as {sha[:7]} "
        "(`dependency_updates: fix` in `.arcs.yml`)."
    )
    # The check run keeps the summary with the dependency section (bumps, what broke, the migration).
    check = render.check_run_output("completed", attempt_summary(attempt))
    check["summary"] = render.truncate(f"{said}\n\n{check['summary']}", render.MAX_CHECK_TEXT)
    run.tell(
        "ARCS committed the migration to the dependency update",
        said,
        conclusion="success",
        check=check,
        comment_body=f"{said}\n\n{render.status_marker(attempt.id)}",
    )
    set_outcome(APPLIED, commit=sha, kind="dependency")
    log.info("publish.update_committed", branch=branch, commit=sha[:12])
    return APPLIED


def _not_update(run: AttemptRun, why: str) -> None:
    run.event(
        "notice", f"dependency_updates: published as a pull request: {why}", policy="dependency_updates"
    )
    log.info("publish.update_commit_skipped", reason=why[:200])


def _message(attempt: AttemptView, kind: FixKind) -> str:
    what = "formatting" if kind == "format" else "lint" if kind == "lint" else attempt.failure_class or "CI"
    return f"ARCS: fix {what} failure\n\nAttempt #{attempt.id} ({kind}, committed by auto_apply).\n"
