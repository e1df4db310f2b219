"""What the job pipeline needs from the outside world: GitHub, the repair engine, the index.

:mod:`jobs.pipeline` depends only on these protocols; the worker wires the real implementations
(``bot.github`` for :class:`GitHubGateway`, an adapter of :mod:`jobs.fix` for
:class:`RepairService`, :mod:`indexing` for :class:`IndexService`) and the tests use the
recording fakes in :mod:`jobs.fakes`.

A gateway is scoped to one installation (the worker builds one per job from
``installation_id``); every method takes the repository as ``owner/name``. Methods raise on
failure (any exception): the pipeline records it and tells the user, it never swallows it
silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from jobs.repair.ports import Interrupt
from runners.config import RepoConfig

Permission = Literal["admin", "maintain", "write", "triage", "read", "none"]
WRITE_PERMISSIONS: frozenset[str] = frozenset({"admin", "maintain", "write"})
"""Permissions that may ask ARCS for work (commands, issue labels)."""

CheckConclusion = Literal["success", "failure", "neutral", "cancelled", "skipped", "action_required"]
Reaction = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]


@dataclass(frozen=True, slots=True)
class IssueInfo:
    """An issue as the worker needs it (fetched fresh: the webhook payload may be stale)."""

    number: int
    title: str
    body: str
    state: str = "open"
    labels: tuple[str, ...] = ()
    author: str | None = None


@dataclass(frozen=True, slots=True)
class PullRequestInfo:
    """A pull request's head and base."""

    number: int
    head_sha: str
    head_branch: str
    base_branch: str
    url: str
    state: str = "open"
    author: str | None = None
    head_repo: str | None = None
    """``owner/name`` of the head repository (differs from the base repository for a fork)."""


@dataclass(frozen=True, slots=True)
class BranchHead:
    """A branch and the commit it points at."""

    name: str
    sha: str


@dataclass(frozen=True, slots=True)
class PullRequestRef:
    """The pull request that :meth:`GitHubGateway.open_or_update_pr` opened or found."""

    number: int
    url: str
    created: bool = True
    """``False`` when an open pull request for the branch already existed (and was updated)."""


class GitHubGateway(Protocol):
    """The GitHub operations of one installation (implemented by ``bot.github``)."""

    def get_permission(self, repo: str, user: str) -> str:
        """``user``'s permission on ``repo``: admin, maintain, write, triage, read or none."""
        ...

    def get_issue(self, repo: str, number: int) -> IssueInfo:
        """The issue's current title, body, state and labels."""
        ...

    def get_pull_request(self, repo: str, number: int) -> PullRequestInfo:
        """The pull request's current head and base."""
        ...

    def get_branch_head(self, repo: str, branch: str | None = None) -> BranchHead:
        """The commit ``branch`` points at (``None``: the default branch, named in the answer)."""
        ...

    def download_failed_logs(self, repo: str, run_id: int) -> str:
        """The logs of the failed jobs of workflow run ``run_id``, concatenated as text."""
        ...

    def clone(self, repo: str, sha: str, dest: Path) -> None:
        """Check out ``repo`` at ``sha`` into the empty folder ``dest`` (no credentials left in it)."""
        ...

    def load_repo_config(self, repo: str, ref: str) -> RepoConfig:
        """The repository's ``.arcs.yml`` at ``ref`` (defaults when absent; ``ConfigError`` if malformed)."""
        ...

    def push_branch(
        self, repo: str, branch: str, base_sha: str, files: Mapping[str, str | None], message: str
    ) -> str:
        """Point ``branch`` at one commit on top of ``base_sha`` that writes ``files`` (``None``
        deletes a path); return the commit sha. Idempotent: the same inputs give the same tree."""
        ...

    def open_or_update_pr(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequestRef:
        """Open a pull request from ``head`` into ``base``, or update the open one for ``head``."""
        ...

    def create_check_run(self, repo: str, head_sha: str, name: str, title: str, summary: str) -> int:
        """Create an in-progress check run on ``head_sha``; return its id."""
        ...

    def update_check_run(
        self,
        repo: str,
        check_run_id: int,
        *,
        conclusion: str | None,
        title: str,
        summary: str,
        details: str | None = None,
    ) -> None:
        """Update a check run; a ``conclusion`` completes it (``None`` keeps it in progress)."""
        ...

    def create_or_edit_status_comment(
        self, repo: str, number: int, body: str, comment_id: int | None = None
    ) -> int:
        """Edit ARCS's status comment ``comment_id`` on issue/PR ``number``, or create one; return its id."""
        ...

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None:
        """React to an issue comment (``eyes`` when a command is accepted, ``confused`` when not)."""
        ...


@dataclass(frozen=True, slots=True)
class RepairRequest:
    """One repair for :class:`RepairService`: a checked-out tree and what to fix in it."""

    kind: Literal["ci", "issue"]
    repo: str
    workdir: Path
    """The checkout at ``head_sha``; the service may change it (the pipeline throws it away)."""
    head_sha: str
    attempt_id: int
    trace_dir: Path
    failure_class: str | None = None
    failure_log: str | None = None
    """Error lines of the failed CI step (sanitized by the service before any model sees them)."""
    test_ids: tuple[str, ...] = ()
    """Failing tests named by the CI log (preferred targets when they fail in the sandbox too);
    empty: reproduce and find them."""
    locations: tuple[tuple[str, int], ...] = ()
    """``(path, line)`` the CI log points at (retrieval hints for the loop)."""
    test_command: str | None = None
    """The failing CI step's command, when the log shows it (``.arcs.yml`` still wins)."""
    issue_title: str | None = None
    issue_body: str | None = None
    instructions: str | None = None
    """Reviewer feedback for ``/arcs revise`` (untrusted text)."""
    tier: str = "auto"
    budget_usd: float | None = None
    iterations: int | None = None
    usd_cap: float | None = None
    """What the owner's monthly budget granted this attempt (reserved in the store): the USD
    budget of the loop is at most this, whatever ``.arcs.yml`` or the command asked for."""
    interrupt: Interrupt | None = field(default=None, compare=False, repr=False)
    """Asked by the loop before reproduction and every round (pause, ``/arcs stop``)."""


@dataclass(frozen=True, slots=True)
class RepairOutcome:
    """What :class:`RepairService` produced. Errors of the loop are data here (``fixed=False``);
    an exception from :meth:`RepairService.run` means the service itself failed."""

    verdict: str
    fixed: bool
    reason: str
    patch: str = ""
    """Unified diff of the fix ('' when none)."""
    files: Mapping[str, str | None] = field(default_factory=dict)
    """New contents of the changed files (``None``: deleted), what gets pushed."""
    explanation: str = ""
    tier: str = ""
    rounds: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    trace_path: str | None = None
    trace_summary: Mapping[str, Any] = field(default_factory=dict)
    budget_usd: float | None = None
    """The USD bound the loop ran under (None: not reported)."""
    usd_capped: bool = False
    """``RepairRequest.usd_cap`` lowered the attempt's own USD budget."""
    stopped_by: str = ""
    """What ended the search without a fix: a budget dimension (``usd``, ``tokens``, …),
    ``rounds``, ``candidates`` or ''."""


class RepairService(Protocol):
    """Runs the repair loop on a checked-out tree (adapted from :mod:`jobs.fix`)."""

    def run(self, request: RepairRequest) -> RepairOutcome:
        """Repair ``request.workdir``; raise only when the service cannot run at all."""
        ...


class IndexService(Protocol):
    """Keeps a repository's code index fresh (``indexing``)."""

    def refresh(self, repo: str, workdir: Path, *, full: bool) -> Mapping[str, Any]:
        """Refresh the index of ``repo`` from the checkout ``workdir``; return statistics."""
        ...
