"""Last green -> red for a CI repair in the worker (issue #14): the change that turned CI red.

For a failed ``workflow_run`` the base is the head commit of the newest successful run of the same
workflow on the same branch (Actions API, :meth:`jobs.ports.GitHubGateway.last_successful_run`);
for a run of a pull request, the merge base of its head with the base branch. The worker's clone
is shallow: :meth:`~jobs.ports.GitHubGateway.fetch_history` deepens it to :data:`HISTORY_DEPTH`
commits behind both ends, then :func:`jobs.history.read_changeset` reads the
:class:`~jobs.repair.changes.ChangeSet` in the checkout.

Never fatal: no green run, a green run at this very commit, a base outside the fetched history, an
API error (a 403 for a missing ``actions: read``), a git error: the repair goes on without the
signal, and :attr:`ChangeSignal.note` says why (logged, and a line of the trace).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import structlog

from jobs.history import merge_base, read_changeset
from jobs.ports import GitHubGateway
from jobs.repair.changes import ChangeSet

log = structlog.get_logger("arcs.green")

HISTORY_DEPTH = 64
"""Commits of history fetched behind the red commit and the base (the reader keeps 50 commits)."""
MAX_NOTE_CHARS = 300


@dataclass(frozen=True, slots=True)
class ChangeSignal:
    """The change since the last green commit, or why there is none (:attr:`note`)."""

    changes: ChangeSet | None
    note: str
    """Where the base came from (``last green run 12 of workflow 7 on main``), or why there is
    no signal."""


@dataclass(frozen=True, slots=True)
class ChangeSource:
    """What a CI failure says about where to look for the last green commit."""

    head_branch: str | None = None
    workflow_id: int | None = None
    pull_request: int | None = None
    """The run belongs to this pull request: the base is the merge base with its base branch."""
    on_default_branch: bool = False
    """The red commit is on the default branch, outside any pull request."""


def no_signal(why: str) -> ChangeSignal:
    """No change signal, and ``why`` in one line."""
    note = "no change signal: " + " ".join(why.split())
    return ChangeSignal(None, note[:MAX_NOTE_CHARS])


def signal_between(workdir: Path, base: str, head: str, origin: str) -> ChangeSignal:
    """The change from ``base`` to ``head`` in the (deepened) checkout at ``workdir``, its note
    ``origin``; no signal when ``base`` is not an ancestor of ``head`` in the fetched history or
    nothing changed. Git errors raise (the callers turn them into no signal)."""
    if merge_base(workdir, base, head) != base:
        return no_signal(f"{base[:7]} is not an ancestor of {head[:7]} in the fetched history")
    changes = read_changeset(workdir, base, head)
    if not changes.commits and not changes.files:
        return no_signal(f"nothing changed between {base[:7]} and {head[:7]}")
    return ChangeSignal(changes, origin[:MAX_NOTE_CHARS])


def change_signal(
    gh: GitHubGateway,
    repo: str,
    workdir: Path,
    *,
    head_sha: str,
    head_branch: str | None,
    workflow_id: int | None,
    pull_request: int | None = None,
) -> ChangeSignal:
    """The change from the last green commit to ``head_sha`` in the checkout at ``workdir``.

    ``pull_request``: the run belongs to that pull request (base: the merge base with its base
    branch); else ``workflow_id`` and ``head_branch`` name the workflow whose last green run is
    the base. Never raises (see the module docstring).
    """
    try:
        if pull_request is not None:
            pr = gh.get_pull_request(repo, pull_request)
            if not pr.base_branch:
                return no_signal(f"pull request #{pull_request} has no base branch")
            tip = gh.get_branch_head(repo, pr.base_branch).sha
            gh.fetch_history(repo, workdir, [head_sha, tip], depth=HISTORY_DEPTH)
            base = merge_base(workdir, tip, head_sha)
            origin = f"the merge base {base[:7]} of pull request #{pull_request} with {pr.base_branch}"
        elif workflow_id and head_branch:
            green = gh.last_successful_run(repo, workflow_id, head_branch)
            if green is None:
                return no_signal(f"no successful run of workflow {workflow_id} on {head_branch}")
            if green.head_sha == head_sha:
                return no_signal(f"the last green run {green.id} is at this commit {head_sha[:7]}")
            gh.fetch_history(repo, workdir, [head_sha, green.head_sha], depth=HISTORY_DEPTH)
            base = green.head_sha
            origin = f"the last green run {green.id} of workflow {workflow_id} on {head_branch} at {base[:7]}"
        else:
            return no_signal("neither a workflow nor a pull request to compare with")
        signal = signal_between(workdir, base, head_sha, f"change signal from {origin}")
    except Exception as exc:  # the signal is optional: any trouble means a repair without it
        log.warning("repair.change_signal_unavailable", repo=repo, error=f"{type(exc).__name__}: {exc}"[:300])
        return no_signal(f"{type(exc).__name__}: {exc}")
    if signal.changes is not None:
        log.info("repair.change_signal", repo=repo, base=base[:12], commits=len(signal.changes.commits))
    return signal


__all__ = ["HISTORY_DEPTH", "ChangeSignal", "ChangeSource", "change_signal", "no_signal", "signal_between"]
