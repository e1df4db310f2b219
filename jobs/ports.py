"""What the jobs need from the outside world: GitHub, the store, the repair engine, the index.

The application modules (:mod:`jobs.attempt`, :mod:`jobs.admission`, :mod:`jobs.commands`,
:mod:`jobs.publish`) depend only on these protocols and values; the worker wires the real
implementations (``bot.github`` for :class:`GitHubGateway`, ``bot.store.store.Store`` for
:class:`AttemptStore`, :class:`jobs.repair_service.FixRepairService` for :class:`RepairService`, :mod:`indexing`
for :class:`IndexService`) and the tests use the recording fakes in :mod:`jobs.fakes`.

A gateway is scoped to one installation (the worker builds one per job from
``installation_id``); every method takes the repository as ``owner/name``. Methods raise on
failure (any exception): the pipeline records it and tells the user, it never swallows it
silently.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from jobs.policy import PolicyRow
from jobs.repair.ports import Interrupt
from runners.config import RepoConfig

if TYPE_CHECKING:
    from indexing.model import Query, SearchHit
    from jobs.plan import PlanDefaults, RepairPlan
    from jobs.repair.report import RepairReport

Permission = Literal["admin", "maintain", "write", "triage", "read", "none"]
WRITE_PERMISSIONS: frozenset[str] = frozenset({"admin", "maintain", "write"})
"""Permissions that may ask ARCS for work (commands, issue labels)."""


def is_bot_account(login: str | None, user_type: str | None = None) -> bool:
    """An App or bot account: ``type`` ``Bot`` or a login ending in ``[bot]``.

    Such an account never gains trust: whatever permission, association or label it carries, it
    acts on other people's input (a triage bot labels what a stranger wrote), so it cannot ask
    ARCS for work.
    """
    return user_type == "Bot" or (login or "").strip().casefold().endswith("[bot]")


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
class DashboardIssue:
    """The repository's dashboard issue (``dashboard_issue``), as GitHub has it."""

    number: int
    url: str
    state: str = "open"
    body: str = ""


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


@dataclass(frozen=True, slots=True)
class WorkflowRunRef:
    """One workflow run: what the last green run of a workflow tells (its commit)."""

    id: int
    head_sha: str
    head_branch: str = ""


@dataclass(frozen=True, slots=True)
class RunState:
    """A workflow run on a commit, as far as a watcher needs it."""

    name: str
    status: str
    conclusion: str | None = None
    html_url: str | None = None


@dataclass(frozen=True, slots=True)
class HeadChecks:
    """What started on a commit: its workflow runs and every app's check runs (by name)."""

    runs: tuple[RunState, ...] = ()
    check_runs: tuple[str, ...] = ()


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

    def rerun_failed_jobs(self, repo: str, run_id: int) -> None:
        """Ask GitHub to re-run the failed jobs of workflow run ``run_id``."""
        ...

    def clone(self, repo: str, sha: str, dest: Path) -> None:
        """Check out ``repo`` at ``sha`` into the empty folder ``dest`` (no credentials left in it)."""
        ...

    def last_successful_run(self, repo: str, workflow_id: int, branch: str) -> WorkflowRunRef | None:
        """The newest successful run of workflow ``workflow_id`` on ``branch`` (None: none yet)."""
        ...

    def fetch_history(self, repo: str, dest: Path, shas: Sequence[str], *, depth: int) -> None:
        """Make the checkout at ``dest`` (made by :meth:`clone`) hold up to ``depth`` commits of
        history behind each of ``shas`` (fetched when missing), so that the change between two of
        them can be read there."""
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

    def commit_on_top(
        self, repo: str, branch: str, parent_sha: str, files: Mapping[str, str | None], message: str
    ) -> str | None:
        """Add one commit writing ``files`` on top of ``branch`` (a pull request's own branch) while
        it still points at ``parent_sha``; the commit's sha, or None when it moved or refused it."""
        ...

    def find_dashboard_issue(self, repo: str) -> DashboardIssue | None:
        """The issue the bot opened as the repository's dashboard (open or closed), or None."""
        ...

    def write_dashboard_issue(self, repo: str, number: int | None, title: str, body: str) -> DashboardIssue:
        """Edit the dashboard issue ``number`` in place (its state untouched), or open it."""
        ...

    def open_or_update_pr(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequestRef:
        """Open a pull request from ``head`` into ``base``, or update the open one for ``head``."""
        ...

    def create_check_run(
        self,
        repo: str,
        head_sha: str,
        name: str,
        title: str,
        summary: str,
        *,
        external_id: str | None = None,
        conclusion: str | None = None,
        actions: Sequence[Mapping[str, str]] = (),
    ) -> int:
        """Create a check run on ``head_sha`` (in progress; completed with ``conclusion``) with
        ``external_id`` (ARCS: the attempt's id) and ``actions`` (buttons); return its id."""
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
        annotations: Sequence[Mapping[str, Any]] = (),
        actions: Sequence[Mapping[str, str]] | None = None,
    ) -> None:
        """Update a check run; a ``conclusion`` completes it (``None`` keeps it in progress).

        ``annotations`` (:mod:`jobs.render_checks`) are appended, in as many requests as GitHub
        needs; ``actions`` replace the buttons (``None``: unchanged)."""
        ...

    def create_or_edit_status_comment(
        self, repo: str, number: int, body: str, comment_id: int | None = None
    ) -> int:
        """Edit ARCS's status comment ``comment_id`` on issue/PR ``number``, or create one; return its id."""
        ...

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None:
        """React to an issue comment (``eyes`` when a command is accepted, ``confused`` when not)."""
        ...

    def checks_on(self, repo: str, sha: str) -> HeadChecks:
        """The workflow runs and check runs on commit ``sha`` (none: nothing started)."""
        ...

    def reply_in_review_thread(
        self, repo: str, number: int, thread_id: int, body: str, reply_id: int | None = None
    ) -> int:
        """ARCS's reply in the review thread whose first comment is ``thread_id`` on pull request
        ``number`` (``reply_id``: edit that earlier reply in place); return the reply's id."""
        ...


# --------------------------------------------------------------------------- the store


class JobSettings(Protocol):
    """The settings the jobs read (``bot.settings.Settings`` has them)."""

    @property
    def home(self) -> Path:
        """ARCS' state folder (scratch checkouts go under ``home/work``)."""
        ...

    @property
    def traces_dir(self) -> Path:
        """Where repair traces are written."""
        ...

    @property
    def max_running_per_repo(self) -> int:
        """Repairs of one repository that may run at once (more are deferred and re-queued)."""
        ...

    @property
    def user_daily_usd(self) -> float:
        """USD one triggering user's repairs may commit in 24 hours (0: no cap)."""
        ...

    @property
    def checks_grace_s(self) -> float:
        """How long after ARCS pushed a fix its checks may take to start before it says so."""
        ...


class AttemptView(Protocol):
    """An attempt row as the jobs read it (``bot.store.models.Attempt`` conforms)."""

    @property
    def id(self) -> int: ...
    @property
    def idempotency_key(self) -> str: ...
    @property
    def installation_id(self) -> int | None: ...
    @property
    def repo(self) -> str: ...
    @property
    def owner(self) -> str: ...
    @property
    def trigger(self) -> str: ...
    @property
    def delivery_id(self) -> str | None: ...
    @property
    def head_sha(self) -> str | None: ...
    @property
    def head_branch(self) -> str | None: ...
    @property
    def run_id(self) -> int | None: ...
    @property
    def failure_signature(self) -> str | None: ...
    @property
    def requested_by(self) -> str | None:
        """Who asked for the repair (a command's author, an issue label's sender, a workflow run's
        triggering actor; None for a bot or a checks app)."""
        ...

    @property
    def base_branch(self) -> str | None: ...
    @property
    def issue_number(self) -> int | None: ...
    @property
    def failure_class(self) -> str | None: ...
    @property
    def status(self) -> str: ...
    @property
    def verdict(self) -> str | None: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def tier(self) -> str | None: ...
    @property
    def rounds(self) -> int | None: ...
    @property
    def tokens(self) -> int | None: ...
    @property
    def cost_usd(self) -> float | None: ...
    @property
    def patch(self) -> str | None: ...
    @property
    def files(self) -> Mapping[str, Any] | None: ...
    @property
    def explanation(self) -> str | None: ...
    @property
    def trace(self) -> Mapping[str, Any] | None: ...
    @property
    def created_at(self) -> dt.datetime: ...
    @property
    def branch(self) -> str | None: ...
    @property
    def pr_number(self) -> int | None: ...
    @property
    def pr_state(self) -> str | None: ...
    @property
    def check_run_id(self) -> int | None: ...
    @property
    def status_comment_id(self) -> int | None: ...
    @property
    def message_id(self) -> str | None: ...
    @property
    def publish_state(self) -> str | None: ...
    @property
    def cancel_requested_at(self) -> dt.datetime | None: ...
    @property
    def cancel_reason(self) -> str | None: ...
    @property
    def reserved_usd(self) -> float | None: ...


class DeliveryView(Protocol):
    """A recorded webhook delivery, as the jobs read it."""

    @property
    def received_at(self) -> dt.datetime:
        """When the webhook arrived."""
        ...


@dataclass(frozen=True, slots=True)
class PrLimits:
    """The pull-request limits checked at admission (None: no such limit)."""

    since: dt.datetime
    """Start of the ``per_day`` window (now - 24 h)."""
    per_day: int | None = None
    open: int | None = None


@dataclass(frozen=True, slots=True)
class UserCap:
    """The daily USD cap of the user who triggered a repair (``ARCS_USER_DAILY_USD``)."""

    login: str
    limit_usd: float
    since: dt.datetime
    """Start of the trailing window (now - 24 h): the user's repairs created since then count."""


@dataclass(frozen=True, slots=True)
class PrTally:
    """ARCS pull requests of one repository."""

    opened_since: int
    open_now: int
    pending: int = 0
    """Admitted attempts that may still open one (running with a reservation, or fixed and not
    yet published)."""


@dataclass(frozen=True, slots=True)
class Admission:
    """What :meth:`AttemptStore.admit_repair` answered."""

    granted_usd: float
    prs: PrTally | None = None
    refused: str | None = None
    """``max_running`` (too many repairs of the repository running), ``max_prs_per_day`` or
    ``max_open_prs`` when a limit is reached."""
    running: int | None = None
    """With ``max_running``: how many other repairs of the repository are running."""
    user_committed: float | None = None
    """With a :class:`UserCap`: what the user's other repairs committed in its window (spent
    plus reserved)."""
    user_oldest: dt.datetime | None = None
    """With a :class:`UserCap`: when the oldest repair counted was created (its spend leaves the
    window 24 hours later); None when nothing was counted."""
    user_wanted: float | None = None
    """With ``user_daily_usd`` refused: the reservation it refused (the request's USD, lowered by
    the monthly caps)."""


class JoinedRunView(Protocol):
    """A workflow run that joined an attempt (``bot.store.models.JoinedRun`` conforms)."""

    @property
    def run_id(self) -> int: ...
    @property
    def workflow_name(self) -> str | None: ...


class ArcsPullView(Protocol):
    """A pull request ARCS opened, as recorded (its pushed head)."""

    @property
    def number(self) -> int: ...
    @property
    def head_sha(self) -> str | None: ...
    @property
    def state(self) -> str: ...
    @property
    def attempt_id(self) -> int | None: ...


class AttemptStore(Protocol):
    """The store operations of the jobs (``bot.store.store.Store`` conforms; see its docstrings)."""

    def claim_attempt(self, key: str, **fields: Any) -> tuple[AttemptView, bool]:
        """The attempt of idempotency key ``key``, and whether this call created it."""
        ...

    def update_attempt(self, attempt_id: int, **fields: Any) -> AttemptView:
        """Set columns of an attempt; the updated row."""
        ...

    def get_attempt_by_key(self, key: str) -> AttemptView | None:
        """The attempt claimed with idempotency key ``key`` (None: none yet)."""
        ...

    def attempt_of_run(self, repo: str, run_id: int) -> AttemptView | None:
        """The CI attempt workflow run ``run_id`` started or joined (None: none yet)."""
        ...

    def join_attempt(
        self,
        attempt_id: int,
        *,
        repo: str,
        run_id: int,
        workflow_name: str | None = None,
        delivery_id: str | None = None,
    ) -> bool:
        """Record a run that failed the same way as the attempt's; True the first time."""
        ...

    def joined_runs(self, attempt_id: int, *, limit: int = 1000) -> Sequence[JoinedRunView]:
        """The runs that joined the attempt, first joined first."""
        ...

    def get_attempt(self, attempt_id: int) -> AttemptView | None:
        """One attempt (None: unknown id)."""
        ...

    def attempts(
        self,
        *,
        repo: str | None = None,
        issue_number: int | None = None,
        head_branch: str | None = None,
        branch: str | None = None,
        statuses: tuple[str, ...] | None = None,
        limit: int = 100,
    ) -> Sequence[AttemptView]:
        """Attempts matching the filters, newest first."""
        ...

    def defer_attempt(self, attempt_id: int) -> AttemptView:
        """Back to ``queued`` for a delayed message (quiet hours)."""
        ...

    def take_deferred(self, attempt_id: int, message_id: str | None) -> bool:
        """Whether this delivery of the delayed message takes the deferred attempt over."""
        ...

    def begin_publish(self, attempt_id: int, *, stale_after: dt.timedelta) -> bool:
        """Whether this worker may publish the attempt now."""
        ...

    def record_pr(
        self,
        *,
        repo: str,
        number: int,
        url: str,
        branch: str,
        attempt_id: int | None = None,
        head_sha: str | None = None,
        state: str = "open",
    ) -> object:
        """Record (or update) a pull request ARCS opened."""
        ...

    def set_pr_state(self, repo: str, number: int, state: str, *, at: dt.datetime | None = None) -> bool:
        """Record merged/closed; False when the pull request is not ARCS'."""
        ...

    def arcs_pr_for_branch(self, repo: str, branch: str) -> ArcsPullView | None:
        """The newest pull request ARCS opened from ``branch`` (``None``: none)."""
        ...

    def record_event(
        self,
        kind: str,
        message: str,
        *,
        attempt_id: int | None = None,
        delivery_id: str | None = None,
        installation_id: int | None = None,
        repo: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> object:
        """Append an event (``refusal``, ``notice``, ``error``, …)."""
        ...

    def get_delivery(self, delivery_id: str) -> DeliveryView | None:
        """A recorded webhook delivery (None: unknown)."""
        ...

    def policy_rows(self, owner: str, repo: str) -> tuple[PolicyRow | None, PolicyRow | None]:
        """The owner's and the repository's policy rows."""
        ...

    def usd_committed(self, owner: str, since: dt.datetime, repo: str | None = None) -> float:
        """USD spent or reserved since ``since`` (one repository, or all of the owner's)."""
        ...

    def admit_repair(
        self,
        attempt_id: int,
        owner: str,
        repo: str,
        *,
        want_usd: float,
        caps: Mapping[str | None, float],
        since: dt.datetime,
        pr_limits: PrLimits | None = None,
        max_running: int | None = None,
        user_cap: UserCap | None = None,
    ) -> Admission:
        """Check the running-repairs cap, the pull-request limits and the triggering user's daily
        cap, reserve USD and mark the attempt admitted, in one transaction."""
        ...

    def release_usd(self, attempt_id: int, *, cost_usd: float | None = None) -> None:
        """Drop the attempt's reservation (charging ``cost_usd`` when given)."""
        ...

    def count_prs(self, repo: str, since: dt.datetime) -> PrTally:
        """ARCS pull requests of ``repo`` opened since ``since`` and open now."""
        ...

    def close(self) -> None:
        """Release the database connections (the worker, at shutdown)."""
        ...


class RepairService(Protocol):
    """Runs a :class:`jobs.plan.RepairPlan` on its checkout (:class:`jobs.repair_service.FixRepairService`)."""

    @property
    def defaults(self) -> PlanDefaults:
        """What the deployment decides for every plan (model, parallelism, toolchains, index)."""
        ...

    def run(self, plan: RepairPlan, *, interrupt: Interrupt | None = None) -> RepairReport:
        """Run ``plan``; the loop's failures are data in the report. Raise only when the engine
        cannot run at all. ``interrupt`` is asked before reproduction and every round."""
        ...


class IndexService(Protocol):
    """Keeps a repository's code index fresh (``indexing``)."""

    def refresh(self, repo: str, workdir: Path, *, full: bool) -> Mapping[str, Any]:
        """Refresh the index of ``repo`` from the checkout ``workdir``; return statistics."""
        ...


class AttemptIndex(Protocol):
    """A repair's retriever over its repository's index, at the repair's commit."""

    snapshot: str
    """What the evidence comes from (commit, embedder, size), recorded in the trace."""

    def search(self, query: Query) -> list[SearchHit]:
        """Ranked chunks (:class:`indexing.retriever.Retriever`)."""
        ...

    def hierarchical(self, query: Query, depth: int = 3) -> list[SearchHit]:
        """Top-down search (:class:`indexing.retriever.Retriever`)."""
        ...

    def close(self) -> None:
        """Release it (the repair is over)."""
        ...


class IndexPort(IndexService, Protocol):
    """The worker's index: :class:`IndexService` plus what repairs and removals need
    (:class:`jobs.index_jobs.RepoIndexService`)."""

    def open_for_attempt(self, repo_id: str, workdir: Path, commit: str) -> AttemptIndex:
        """The index of ``repo_id`` (``owner/name``) refreshed to the checkout ``workdir`` at
        ``commit``, under the repository's lock; raise an ``ArcsError`` when it cannot be opened."""
        ...

    def drop(self, repo: str) -> bool:
        """Delete ``repo``'s index (both collections, manifest, snapshot); True when it existed."""
        ...
