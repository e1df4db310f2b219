"""What the handlers read from a webhook payload: small typed views, and nothing more.

A payload carries hundreds of fields, and which ones differ between github.com, GHE.com and each
GitHub Enterprise Server release (``installation.app_slug``, ``check_run.app.permissions``,
``repository.topics`` are missing from some; new ones appear every month). The bot reads a few
dozen. Each handler declares a view of exactly the fields it uses; a view ignores every other
field, present or not, so a field the bot never reads cannot make GitHub's delivery fail.

A field the handler needs (for its decision, the job's idempotency key or an argument the worker
cannot do without) is required: when it is missing or of the wrong type, :func:`read` raises
:class:`PayloadInvalid` naming it (the endpoint answers 400 and records nothing). Fields with a
default are the ones a handler copes without (informational job arguments, a reason to ignore).

This module is the list of everything ARCS reads from GitHub's webhooks, grouped by concern.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError


class View(BaseModel):
    """Base of the views: unknown fields ignored, immutable, values coerced where lossless."""

    model_config = ConfigDict(extra="ignore", frozen=True)


V = TypeVar("V", bound=View)


class PayloadInvalid(ValueError):
    """A field a handler needs is missing or of the wrong type (the message names the fields)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(the payload)"


def read(view: type[V], payload: Mapping[str, Any]) -> V:
    """``payload`` as ``view``; :class:`PayloadInvalid` names the missing or mistyped fields."""
    try:
        return view.model_validate(payload)
    except ValidationError as exc:
        problems: list[str] = []
        for err in exc.errors(include_url=False, include_input=False):
            where = _where(err["loc"])
            if err["type"] == "missing":
                problems.append(f"{where} is missing")
            else:
                problems.append(f"{where}: {err['msg'].lower()}")
        shown = problems[:3]
        if len(problems) > 3:
            shown.append(f"+{len(problems) - 3} more")
        raise PayloadInvalid(shown) from exc


# --- shared pieces --------------------------------------------------------------------------------


class Repository(View):
    """The delivery's repository (the one the job works on)."""

    id: int
    full_name: str


class RepositoryName(View):
    """A repository named in a list (installations) or when only the name is used."""

    full_name: str


class RepositoryId(View):
    """A repository compared by id (forks: is the head repository this one?)."""

    id: int


class User(View):
    """An account (a comment's author, a sender, a pull request's opener)."""

    login: str
    type: str | None = None


# --- workflow_run (GitHub Actions) ------------------------------------------------------------


class HeadRepository(View):
    """Where a workflow run's code comes from (another id: a fork)."""

    id: int
    full_name: str | None = None


class PullNumber(View):
    """A pull request named by a run (its number is passed to the worker)."""

    number: int


class WorkflowRun(View):
    """``workflow_run``: the decision (conclusion, origin, branch) and the job's arguments."""

    id: int
    head_sha: str
    status: str | None = None
    """``action_required``: the run waits for a maintainer's approval."""
    conclusion: str | None = None
    head_branch: str | None = None
    head_repository: HeadRepository | None
    """Required, may be null (the fork was deleted): a run of unknown origin is never repaired."""
    name: str | None = None
    html_url: str | None = None
    run_attempt: int | None = None
    workflow_id: int | None = None
    check_suite_id: int | None = None
    pull_requests: list[PullNumber | None] = []
    actor: User | None = None
    """Who started the run (the pusher, the pull request's author)."""
    triggering_actor: User | None = None
    """Who started this attempt of the run (a re-run's clicker; else the same as ``actor``)."""


class WorkflowRunCompleted(View):
    """``workflow_run.completed`` (and ``requested``: the same fields)."""

    repository: Repository
    workflow_run: WorkflowRun


# --- check_suite / check_run (other CI apps) ------------------------------------------------


class App(View):
    """The GitHub App that ran the checks (``github-actions`` is left to workflow_run)."""

    id: int
    """Part of the idempotency key (a failed run and its failed suite coalesce)."""
    slug: str | None = None


class PullEnd(View):
    """The head or base of a pull request named by a check (its repository, for forks)."""

    repo: RepositoryId


class CheckPull(View):
    """A pull request named by a check suite or run."""

    number: int
    head: PullEnd
    base: PullEnd


class CheckSuite(View):
    """``check_suite``: the decision and the job's arguments."""

    id: int
    head_sha: str
    app: App
    status: str | None = None
    conclusion: str | None = None
    head_branch: str | None = None
    pull_requests: list[CheckPull] = []


class CheckSuiteCompleted(View):
    """``check_suite.completed``."""

    repository: Repository
    check_suite: CheckSuite


class CheckRunSuite(View):
    """The suite a check run belongs to (its branch: check runs carry none of their own)."""

    id: int | None = None
    head_branch: str | None = None


class CheckRun(View):
    """``check_run``: the decision and the job's arguments."""

    id: int
    head_sha: str
    name: str | None = None
    conclusion: str | None = None
    html_url: str | None = None
    app: App | None = None
    check_suite: CheckRunSuite | None = None
    pull_requests: list[CheckPull] = []


class CheckRunCompleted(View):
    """``check_run.completed``."""

    repository: Repository
    check_run: CheckRun


class RequestedAction(View):
    """The button a person clicked on a check run (its ``identifier``)."""

    identifier: str


class ActionCheckRun(View):
    """The check run whose button was clicked (ARCS's own: its app, its attempt, its pull request)."""

    id: int
    head_sha: str
    app: App | None = None
    """``None`` or another App's: not ARCS's check run (ignored)."""
    external_id: str | None = None
    """ARCS writes the attempt's id here."""
    pull_requests: list[CheckPull] = []


class CheckRunRequestedAction(View):
    """``check_run.requested_action``."""

    repository: Repository
    check_run: ActionCheckRun
    sender: User
    requested_action: RequestedAction | None = None
    """``None``: a malformed delivery (ignored, recorded with the reason)."""


# --- issues --------------------------------------------------------------------------------------


class Label(View):
    """The label just added."""

    name: str | None = None


class LabeledIssue(View):
    """The labelled issue (a pull request is an issue with ``pull_request`` set)."""

    number: int
    title: str
    html_url: str | None = None
    state: str | None = None
    pull_request: dict[str, Any] | None = None


class IssuesLabeled(View):
    """``issues.labeled``."""

    repository: RepositoryName
    issue: LabeledIssue
    sender: User
    label: Label | None = None


# --- issue_comment (commands) ------------------------------------------------------------------


class CommentedIssue(View):
    """The issue or pull request a comment is on."""

    number: int
    user: User | None = None
    pull_request: dict[str, Any] | None = None


class Comment(View):
    """The comment (its body is parsed for ``/arcs`` commands)."""

    id: int
    body: str
    user: User | None = None
    """``None``: a deleted account (never runs a command)."""
    html_url: str | None = None
    author_association: str | None = None


class IssueComment(View):
    """``issue_comment.created`` and ``issue_comment.edited``."""

    repository: RepositoryName
    issue: CommentedIssue
    comment: Comment


# --- pull_request_review_comment (commands in review threads) ------------------------------------


class ReviewComment(View):
    """A review comment (its body is parsed; ``in_reply_to_id`` names its thread's first comment)."""

    id: int
    body: str
    user: User | None = None
    author_association: str | None = None
    in_reply_to_id: int | None = None


class ReviewedPullHead(View):
    """The reviewed pull request's head (a fork's: never repaired)."""

    repo: RepositoryId | None = None


class ReviewedPull(View):
    """The pull request a review comment is on."""

    number: int
    user: User | None = None
    head: ReviewedPullHead | None = None


class PullRequestReviewComment(View):
    """``pull_request_review_comment.created``."""

    repository: Repository
    pull_request: ReviewedPull
    comment: ReviewComment


# --- installation (index refreshes and drops) ---------------------------------------------------


class InstallationCreated(View):
    """``installation.created``: the repositories it was installed on (none listed: all)."""

    repositories: list[RepositoryName] | None = None


class InstallationRepositoriesAdded(View):
    """``installation_repositories.added``."""

    repositories_added: list[RepositoryName]


class InstallationDeleted(View):
    """``installation.deleted``: the repositories it could access (GHES sends none)."""

    repositories: list[RepositoryName] | None = None


class InstallationRepositoriesRemoved(View):
    """``installation_repositories.removed``."""

    repositories_removed: list[RepositoryName]


# --- push (incremental index refresh) -------------------------------------------------------


class PushRepository(View):
    """The pushed repository and its default branch (only that branch is indexed)."""

    full_name: str
    default_branch: str


class Push(View):
    """``push``."""

    ref: str
    before: str
    after: str
    repository: PushRepository
    created: bool = False
    deleted: bool = False


# --- pull_request (outcomes of ARCS's pull requests) -----------------------------------------


class PullHead(View):
    """The head of a closed pull request (an ``arcs/`` branch of this repository is ARCS's)."""

    ref: str
    sha: str
    repo: RepositoryId | None = None
    """``None``: the head repository was deleted (a fork)."""


class ClosedPull(View):
    """The closed pull request."""

    number: int
    head: PullHead
    closed_at: dt.datetime
    user: User | None = None
    merged: bool | None = None
    merged_at: dt.datetime | None = None


class PullRequestClosed(View):
    """``pull_request.closed``."""

    repository: Repository
    pull_request: ClosedPull


# --- ping --------------------------------------------------------------------------------------


class Ping(View):
    """``ping``: GitHub's zen line, echoed back."""

    zen: str | None = None
