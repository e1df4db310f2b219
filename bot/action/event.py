"""What the triggering event asks ``arcs action`` to do (pure: the event payload in, a value out).

Supported events and what is repaired:

- ``push`` (and ``schedule``/``workflow_dispatch``): the pushed commit (``GITHUB_SHA``) of the branch
  in ``GITHUB_REF``; a fix goes to a pull request against that branch.
- ``pull_request``/``pull_request_target``: the pull request's head commit and branch.
- ``workflow_run``: the failed run's ``head_sha``/``head_branch``; its failed jobs' logs name the
  failing step (the test command) and the failing tests. A run that did not fail is skipped.
- ``issue_comment``: a ``/arcs fix`` (or ``retry``) comment, created (not edited) by a person whose
  ``author_association`` is ``OWNER``, ``MEMBER`` or ``COLLABORATOR`` (the workflow should check it
  too: the snippets in the README do). On a pull request its head is repaired (read through the
  API); on an issue the default branch is, with the issue's text as the task.

Forks (head repository ≠ base repository) are never repaired or written to: the workflow runs
someone else's code, possibly with this repository's secrets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bot.action.env import ActionEnv
from bot.commands import Command, CommandError, parse_command
from jobs.ports import is_bot_account

Kind = Literal["push", "pull_request", "workflow_run", "issue_comment"]
Decision = Literal["repair", "skip", "refuse"]
WRITE_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
"""``author_association`` values of people who may ask for a repair (GitHub's webhook docs:
OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, FIRST_TIME_CONTRIBUTOR, FIRST_TIMER, MANNEQUIN, NONE)."""
FAILED_CONCLUSIONS = frozenset({"failure", "timed_out"})
ARCS_PREFIX = "arcs/"


@dataclass(frozen=True, slots=True)
class Target:
    """What to repair and where the result goes."""

    kind: Kind
    decision: Decision
    reason: str = ""
    """Why ARCS skips or refuses (one line), empty when it repairs."""
    sha: str = ""
    """The commit repaired (the fix branch's base); empty until a pull request is looked up."""
    branch: str = ""
    """The failing branch: a fix pull request goes against it."""
    default_branch: str = ""
    pr_number: int | None = None
    issue_number: int | None = None
    """Where a comment goes (the pull request's or the issue's number)."""
    fork: bool = False
    failed_run_id: int | None = None
    """``workflow_run``: the failed run whose logs name the failing step and tests."""
    command: Command | None = None
    issue_title: str = ""
    issue_body: str = ""
    """A comment on an issue (not a pull request): the issue is the task."""
    needs_pull_lookup: bool = False
    """``issue_comment`` on a pull request: head sha/branch/repository come from the API."""
    base_sha: str = ""
    """Where the change signal starts (:mod:`bot.action.changes`): ``push``: the event's
    ``before``; a pull request: its base branch's tip (the base is the merge base with the head)."""
    workflow_id: int | None = None
    """``workflow_run``: the workflow whose last successful run on :attr:`branch` is the base."""

    @property
    def issue_text(self) -> str | None:
        """The task text for an issue repair (title, blank line, body), None for a CI repair."""
        if self.kind != "issue_comment" or self.pr_number is not None or not self.issue_title:
            return None
        return f"{self.issue_title}\n\n{self.issue_body}".strip()


def _get(data: Mapping[str, Any] | None, *path: str) -> Any:
    node: Any = data
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _branch_of(ref: str) -> str:
    return ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else ""


def _guard_branch(target: Target) -> Target:
    """ARCS does not repair its own fix branches from a workflow (no fix-of-a-fix loops)."""
    if target.decision == "repair" and target.branch.startswith(ARCS_PREFIX):
        return _replace(
            target, "skip", f"CI failed on ARCS's own branch {target.branch}; not repairing it again"
        )
    return target


def _replace(target: Target, decision: Decision, reason: str) -> Target:
    from dataclasses import replace

    return replace(target, decision=decision, reason=reason)


def target_for(env: ActionEnv) -> Target:
    """The :class:`Target` of this step's event (see the module docstring)."""
    event = env.event
    default_branch = _str(_get(event, "repository", "default_branch"))
    name = env.event_name
    if name in ("pull_request", "pull_request_target"):
        return _guard_branch(_pull_request(event, default_branch))
    if name == "workflow_run":
        return _guard_branch(_workflow_run(env, event, default_branch))
    if name == "issue_comment":
        return _issue_comment(env, event, default_branch)
    branch = _branch_of(env.ref)
    target = Target(
        kind="push",
        decision="repair",
        sha=env.sha,
        branch=branch,
        default_branch=default_branch,
        base_sha=_str(_get(event, "before")) if name == "push" else "",
    )
    if not branch:
        return _replace(
            target, "skip", f"{env.ref or 'this ref'} is not a branch: a fix needs a branch to go to"
        )
    return _guard_branch(target)


def _pull_request(event: Mapping[str, Any], default_branch: str) -> Target:
    pull = _get(event, "pull_request")
    head_repo = _str(_get(pull, "head", "repo", "full_name"))
    base_repo = _str(_get(pull, "base", "repo", "full_name")) or _str(_get(event, "repository", "full_name"))
    number = _int(_get(pull, "number"))
    target = Target(
        kind="pull_request",
        decision="repair",
        sha=_str(_get(pull, "head", "sha")),
        branch=_str(_get(pull, "head", "ref")),
        default_branch=default_branch,
        pr_number=number,
        issue_number=number,
        fork=head_repo != base_repo,
        base_sha=_str(_get(pull, "base", "sha")),
    )
    if number is None or not target.sha:
        return _replace(target, "refuse", "the pull_request event has no pull_request.number/head.sha")
    if target.fork:
        return _replace(target, "skip", fork_reason(head_repo or "a deleted fork"))
    return target


def fork_reason(head_repo: str) -> str:
    """The one line said for a fork's pull request."""
    return (
        f"this pull request comes from a fork ({head_repo}): ARCS neither runs nor publishes for forks "
        "from a workflow (the code is not this repository's and the token may carry its secrets); "
        "the author can run `arcs fix` locally"
    )


def _workflow_run(env: ActionEnv, event: Mapping[str, Any], default_branch: str) -> Target:
    run = _get(event, "workflow_run")
    head_repo = _str(_get(run, "head_repository", "full_name"))
    base_repo = _str(_get(run, "repository", "full_name")) or env.repository
    pulls = _get(run, "pull_requests")
    number = _int(_get(pulls[0], "number")) if isinstance(pulls, list) and pulls else None
    target = Target(
        kind="workflow_run",
        decision="repair",
        sha=_str(_get(run, "head_sha")),
        branch=_str(_get(run, "head_branch")),
        default_branch=default_branch,
        pr_number=number,
        issue_number=number,
        fork=bool(head_repo) and head_repo != base_repo,
        failed_run_id=_int(_get(run, "id")),
        workflow_id=_int(_get(run, "workflow_id")),
    )
    conclusion = _str(_get(run, "conclusion"))
    if conclusion not in FAILED_CONCLUSIONS:
        return _replace(
            target,
            "skip",
            f"the workflow run concluded {conclusion or 'without a conclusion'}: nothing to repair",
        )
    if not target.sha or target.failed_run_id is None:
        return _replace(target, "refuse", "the workflow_run event has no workflow_run.head_sha/id")
    if target.fork:
        return _replace(target, "skip", fork_reason(head_repo))
    return target


def _issue_comment(env: ActionEnv, event: Mapping[str, Any], default_branch: str) -> Target:
    issue = _get(event, "issue")
    number = _int(_get(issue, "number"))
    on_pull = isinstance(_get(issue, "pull_request"), Mapping)
    base = Target(
        kind="issue_comment",
        decision="repair",
        default_branch=default_branch,
        issue_number=number,
        pr_number=number if on_pull else None,
    )
    action = _str(_get(event, "action"))
    if action != "created":
        return _replace(
            base, "skip", f"the comment was {action or 'not created'}: only new comments are commands"
        )
    user_type = _str(_get(event, "comment", "user", "type"))
    if is_bot_account(_str(_get(event, "comment", "user", "login")), user_type):
        return _replace(base, "skip", "the comment is a bot's: bots do not give ARCS commands")
    parsed = parse_command(_str(_get(event, "comment", "body")))
    if parsed is None:
        return _replace(base, "skip", "the comment has no /arcs command")
    if isinstance(parsed, CommandError):
        return _replace(base, "skip", f"the /arcs command was not understood: {parsed.message}")
    if parsed.verb not in ("fix", "retry"):
        return _replace(
            base, "skip", f"`/arcs {parsed.verb}` is for the ARCS App; the Action runs `/arcs fix` only"
        )
    association = _str(_get(event, "comment", "author_association"))
    login = _str(_get(event, "comment", "user", "login")) or "someone"
    if association not in WRITE_ASSOCIATIONS:
        return _replace(
            base,
            "refuse",
            f"{login} is {association or 'not associated with this repository'}: only OWNER, MEMBER or "
            "COLLABORATOR may ask ARCS for a fix",
        )
    if number is None:
        return _replace(base, "refuse", "the issue_comment event has no issue.number")
    from dataclasses import replace

    if on_pull:
        return replace(base, command=parsed, needs_pull_lookup=True)
    title = _str(_get(issue, "title"))
    return _guard_branch(
        replace(
            base,
            command=parsed,
            sha=env.sha,
            branch=default_branch or _branch_of(env.ref),
            issue_title=title or "Untitled issue",
            issue_body=_str(_get(issue, "body")),
        )
    )


def with_pull(
    target: Target, *, sha: str, branch: str, head_repo: str, base_repo: str, base_sha: str = ""
) -> Target:
    """``target`` completed with the pull request read through the API (``issue_comment`` on a PR;
    ``base_sha``: its base branch's tip, where the change signal starts)."""
    from dataclasses import replace

    done = replace(
        target,
        sha=sha,
        branch=branch,
        fork=head_repo != base_repo,
        needs_pull_lookup=False,
        base_sha=base_sha,
    )
    if done.fork:
        return _replace(done, "skip", fork_reason(head_repo or "a deleted fork"))
    return _guard_branch(done)


__all__ = ["WRITE_ASSOCIATIONS", "Decision", "Kind", "Target", "fork_reason", "target_for", "with_pull"]
