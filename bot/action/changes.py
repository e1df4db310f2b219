"""The change signal of ``arcs action`` (issue #14): what changed since the last green commit, read
in the job's own checkout and handed to the repair as :attr:`jobs.fix.FixRequest.changes`.

The base commit, per event:

- ``push``: the event's ``before`` (the branch's previous tip). None when it is all zeros (the push
  created the branch), is not an ancestor of the pushed commit (a force push) or cannot be fetched.
- ``pull_request`` (and ``/arcs fix`` on a pull request, as ``issue_comment``): the merge base of the
  base branch's tip (``pull_request.base.sha``) and the head.
- ``workflow_run``: the head commit of the newest successful run of the same workflow on the same
  branch (Actions API with ``github-token``; it needs ``actions: read``).
- anything else (``schedule``, ``workflow_dispatch``, an issue): none.

``actions/checkout`` fetches one commit by default. A shallow checkout is deepened to
:data:`jobs.green.HISTORY_DEPTH` commits behind both ends (``git fetch --depth``; never shallower than
it already is) with the credentials ``actions/checkout`` left in the repository's git configuration
(``persist-credentials: true``, its default), else with ``github-token`` in the environment of that
one git process (:class:`bot.github.git.GitAuth`: never on disk, never in argv). The work tree is not
touched. Then :func:`jobs.history.read_changeset` reads the :class:`~jobs.repair.changes.ChangeSet`.

Never fatal: an API error (403 without ``actions: read``, 404), no green run, a git failure, a base
outside the fetched history — the repair runs without the signal and :attr:`ChangeSignal.note` (one
line of the job summary) says why.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from bot.github.client import github_errors
from bot.github.git import GitAuth, run_git
from jobs.green import HISTORY_DEPTH, ChangeSignal, no_signal, signal_between
from jobs.history import merge_base

if TYPE_CHECKING:
    from bot.action.env import ActionEnv
    from bot.action.event import Target
    from bot.github.client import InstallationClient

log = structlog.get_logger(__name__)

SHA_RE = re.compile(r"^[0-9a-f]{40}$")


class NoSignal(Exception):
    """Why there is no change signal (one line)."""


def change_signal(env: ActionEnv, target: Target, client: InstallationClient | None) -> ChangeSignal | None:
    """The change from the last green commit to ``target.sha`` in ``env.workspace``; None for a
    repair that is not a CI failure (an issue). Never raises (see the module docstring)."""
    if target.issue_text is not None:
        return None
    try:
        base, origin, pull = _base(env, target, client)
        head = _full_sha(target.sha, "the repaired commit")
        workspace = env.workspace
        deepen(workspace, [base, head], client)
        if pull:
            base = merge_base(workspace, base, head)
            origin = f"the merge base {base[:7]} of pull request #{target.pr_number} with its base branch"
        if base == head:
            raise NoSignal(f"{origin} is the repaired commit {head[:7]} itself")
        signal = signal_between(workspace, base, head, f"base: {origin}")
    except NoSignal as why:
        log.info("action.change_signal_none", reason=str(why)[:300])
        return no_signal(str(why))
    except Exception as exc:  # the signal is optional: any trouble means a repair without it
        log.warning("action.change_signal_unavailable", error=f"{type(exc).__name__}: {exc}"[:300])
        return no_signal(f"{type(exc).__name__}: {exc}")
    if signal.changes is not None:
        log.info("action.change_signal", base=base[:12], head=head[:12], commits=len(signal.changes.commits))
    return signal


def _full_sha(sha: str, what: str) -> str:
    if not SHA_RE.match(sha):
        raise NoSignal(f"{what} is not a full commit sha ({sha[:40]!r})")
    return sha


def _base(env: ActionEnv, target: Target, client: InstallationClient | None) -> tuple[str, str, bool]:
    """``(base sha, where it comes from, is a pull request's base tip)``: see the module docstring."""
    if target.kind == "push":
        if env.event_name != "push":
            raise NoSignal(f"a {env.event_name} event names no earlier commit to compare with")
        before = target.base_sha
        if not before.strip("0"):
            raise NoSignal("the push created the branch (its `before` is all zeros)")
        return _full_sha(before, "the push's `before`"), f"the push's previous tip {before[:7]}", False
    if target.pr_number is not None and target.kind in ("pull_request", "issue_comment"):
        return _full_sha(target.base_sha, "the pull request's base"), "", True
    if target.kind == "workflow_run":
        return _last_green(target, client)
    raise NoSignal(f"a {target.kind} event names no earlier commit to compare with")


def _last_green(target: Target, client: InstallationClient | None) -> tuple[str, str, bool]:
    """The head commit of the newest successful run of the failed run's workflow on its branch."""
    if client is None:
        raise NoSignal("no github-token: the last green run was not looked up")
    if target.workflow_id is None or not target.branch:
        raise NoSignal("the workflow_run event names no workflow_id or head_branch")
    what = f"list the successful runs of workflow {target.workflow_id} on {target.branch}"
    try:
        with github_errors(what):
            data: Any = client.gh.rest.actions.list_workflow_runs(
                client.owner,
                client.repo,
                target.workflow_id,
                branch=target.branch,
                status="success",
                exclude_pull_requests=True,
                per_page=1,
            ).json()
    except Exception as exc:
        raise NoSignal(f"{exc} (the last green run needs `actions: read`)") from exc
    runs = data.get("workflow_runs") if isinstance(data, dict) else None
    for run in runs or []:
        sha = str(run.get("head_sha") or "") if isinstance(run, dict) else ""
        if sha:
            if sha == target.sha:
                raise NoSignal(f"the last green run {run.get('id')} is at this commit {sha[:7]}")
            origin = f"the last green run {run.get('id')} of workflow {target.workflow_id} on {target.branch} at {sha[:7]}"
            return _full_sha(sha, "the last green run's head"), origin, False
    raise NoSignal(f"no successful run of workflow {target.workflow_id} on {target.branch}")


# --------------------------------------------------------------------------- the checkout


def _git(workspace: Path, *args: str, auth: GitAuth | None = None, check: bool = True) -> str:
    return run_git(
        list(args), cwd=workspace, auth=auth, what="read the change since green", check=check
    ).stdout


def _has_commit(workspace: Path, sha: str) -> bool:
    done = run_git(
        ["cat-file", "-e", f"{sha}^{{commit}}"], cwd=workspace, what="look up a commit", check=False
    )
    return done.returncode == 0


def _persisted_credentials(workspace: Path) -> bool:
    """``actions/checkout`` left an ``http.<url>.extraheader`` in the repository's configuration
    (``persist-credentials: true``): a fetch uses it as is (adding ours would send two headers)."""
    found = _git(workspace, "config", "--includes", "--get-regexp", r"^http\..*\.extraheader$", check=False)
    return bool(found.strip())


def _ancestry_known(workspace: Path, shas: list[str]) -> bool:
    """Both commits are here and have a common ancestor in the fetched history."""
    if not all(_has_commit(workspace, sha) for sha in shas):
        return False
    done = run_git(["merge-base", *shas], cwd=workspace, what="merge-base", check=False)
    return done.returncode == 0 and bool(done.stdout.strip())


def deepen(workspace: Path, shas: list[str], client: InstallationClient | None) -> bool:
    """Fetch what the checkout lacks to relate ``shas`` (two commits): a shallow one is deepened to
    at least :data:`~jobs.green.HISTORY_DEPTH` commits behind each; a full one fetches only the
    commits it does not hold. True when it fetched. Raises on a git failure."""
    shallow = _git(workspace, "rev-parse", "--is-shallow-repository").strip() == "true"
    if _ancestry_known(workspace, shas):
        return False
    args = ["fetch", "-q", "--no-tags", "--no-recurse-submodules"]
    if shallow:
        held = _git(workspace, "rev-list", "--count", "HEAD", check=False).strip()
        depth = max(HISTORY_DEPTH, int(held) if held.isdigit() else 0)
        args += [f"--depth={depth}", "origin", *shas]
    else:
        missing = [sha for sha in shas if not _has_commit(workspace, sha)]
        if not missing:
            return False  # a full history holding both: nothing more to fetch
        args += ["origin", *missing]
    auth = None
    if client is not None and not _persisted_credentials(workspace):
        auth = GitAuth(client.tokens, _git(workspace, "remote", "get-url", "origin").strip())
    run_git(args, cwd=workspace, auth=auth, what=f"fetch the history of {', '.join(s[:7] for s in shas)}")
    log.info("action.history_fetched", shas=[s[:12] for s in shas], shallow=shallow)
    return True


__all__ = ["NoSignal", "change_signal", "deepen"]
