"""Recording fakes of the pipeline's ports (:mod:`jobs.ports`), for tests and local runs.

They keep every call in ``calls`` (method name and arguments), are thread-safe (a worker's
threads share them) and can be told to fail: ``fail["method"] = SomeError(...)``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.plan import PlanDefaults, RepairPlan
from jobs.ports import (
    BranchHead,
    DashboardIssue,
    HeadChecks,
    IssueInfo,
    PullRequestInfo,
    PullRequestRef,
    WorkflowRunRef,
)
from jobs.repair.budget import Spend
from jobs.repair.ports import Interrupt
from jobs.repair.report import RepairReport
from runners.config import RepoConfig


@dataclass(frozen=True, slots=True)
class Call:
    """One recorded call."""

    method: str
    args: Mapping[str, Any]


class _Recorder:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.calls: list[Call] = []
        self.fail: dict[str, BaseException] = {}

    def _record(self, method: str, **args: Any) -> None:
        with self._lock:
            self.calls.append(Call(method, args))
            error = self.fail.get(method)
        if error is not None:
            raise error

    def calls_to(self, method: str) -> list[Mapping[str, Any]]:
        """The arguments of every call to ``method``, in order."""
        with self._lock:
            return [c.args for c in self.calls if c.method == method]


class FakeGitHubGateway(_Recorder):
    """An in-memory GitHub: permissions, issues, PRs and logs are set up by the test."""

    def __init__(
        self,
        *,
        permissions: Mapping[str, str] | None = None,
        default_permission: str = "write",
        files: Mapping[str, str] | None = None,
        config: RepoConfig | None = None,
    ) -> None:
        super().__init__()
        self.permissions = dict(permissions or {})
        self.default_permission = default_permission
        self.files: dict[str, str] = dict(files or {"README.md": "fake repository\n"})
        """What :meth:`clone` writes into the destination."""
        self.config = config or RepoConfig()
        self.issues: dict[int, IssueInfo] = {}
        self.pull_requests: dict[int, PullRequestInfo] = {}
        self.logs: dict[int, str] = {}
        self.heads: dict[str, str] = {}
        """branch -> sha for :meth:`get_branch_head`."""
        self.green_runs: dict[tuple[int, str], WorkflowRunRef] = {}
        """``(workflow id, branch)`` -> the last successful run (:meth:`last_successful_run`)."""
        self.branches: dict[str, tuple[str, dict[str, str | None]]] = {}
        """branch -> (base sha, files) as last pushed."""
        self.opened: dict[str, PullRequestRef] = {}
        """head branch -> the PR opened for it."""
        self.comments: dict[int, tuple[int, str]] = {}
        self.dashboard: DashboardIssue | None = None
        """The dashboard issue the fake holds (set it to start with one)."""
        """comment id -> (issue/PR number, body)."""
        self.check_runs: dict[int, dict[str, Any]] = {}
        self.head_checks: dict[str, HeadChecks] = {}
        """sha -> what started on it (:meth:`checks_on`; none by default)."""
        self._next_id = 1000

    def _new_id(self) -> int:
        with self._lock:
            self._next_id += 1
            return self._next_id

    def get_permission(self, repo: str, user: str) -> str:
        """The configured permission of ``user`` (``default_permission`` otherwise)."""
        self._record("get_permission", repo=repo, user=user)
        return self.permissions.get(user, self.default_permission)

    def get_issue(self, repo: str, number: int) -> IssueInfo:
        """The configured issue, or a generic one."""
        self._record("get_issue", repo=repo, number=number)
        return self.issues.get(number) or IssueInfo(number, f"Issue {number}", "Something is broken.")

    def get_pull_request(self, repo: str, number: int) -> PullRequestInfo:
        """The configured pull request, or one on ``feature`` into ``main``."""
        self._record("get_pull_request", repo=repo, number=number)
        return self.pull_requests.get(number) or PullRequestInfo(
            number, "f" * 40, "feature", "main", f"https://github.test/{repo}/pull/{number}", head_repo=repo
        )

    def get_branch_head(self, repo: str, branch: str | None = None) -> BranchHead:
        """``branch`` (default ``main``) at the configured :attr:`heads` sha, else ``a…a``."""
        self._record("get_branch_head", repo=repo, branch=branch)
        name = branch or "main"
        return BranchHead(name, self.heads.get(name, "a" * 40))

    def download_failed_logs(self, repo: str, run_id: int) -> str:
        """The configured log of ``run_id`` ('' when none)."""
        self._record("download_failed_logs", repo=repo, run_id=run_id)
        return self.logs.get(run_id, "")

    def rerun_failed_jobs(self, repo: str, run_id: int) -> None:
        """Recorded only."""
        self._record("rerun_failed_jobs", repo=repo, run_id=run_id)

    def clone(self, repo: str, sha: str, dest: Path) -> None:
        """Write :attr:`files` into ``dest``."""
        self._record("clone", repo=repo, sha=sha, dest=dest)
        for rel, text in self.files.items():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    def last_successful_run(self, repo: str, workflow_id: int, branch: str) -> WorkflowRunRef | None:
        """The configured :attr:`green_runs` entry (None when there is none)."""
        self._record("last_successful_run", repo=repo, workflow_id=workflow_id, branch=branch)
        return self.green_runs.get((workflow_id, branch))

    def fetch_history(self, repo: str, dest: Path, shas: Sequence[str], *, depth: int) -> None:
        """Recorded only (:meth:`clone` writes files, no git history)."""
        self._record("fetch_history", repo=repo, dest=dest, shas=tuple(shas), depth=depth)

    def load_repo_config(self, repo: str, ref: str) -> RepoConfig:
        """The configured :class:`RepoConfig`."""
        self._record("load_repo_config", repo=repo, ref=ref)
        return self.config

    def push_branch(
        self, repo: str, branch: str, base_sha: str, files: Mapping[str, str | None], message: str
    ) -> str:
        """Remember the branch's content; the commit sha is derived from it (idempotent)."""
        self._record(
            "push_branch", repo=repo, branch=branch, base_sha=base_sha, files=dict(files), message=message
        )
        with self._lock:
            self.branches[branch] = (base_sha, dict(files))
        return hashlib.sha1(repr((base_sha, sorted(files.items(), key=str))).encode()).hexdigest()

    def commit_on_top(
        self, repo: str, branch: str, parent_sha: str, files: Mapping[str, str | None], message: str
    ) -> str | None:
        """Record it; the commit's sha as :meth:`push_branch` derives it."""
        self._record(
            "commit_on_top",
            repo=repo,
            branch=branch,
            parent_sha=parent_sha,
            files=dict(files),
            message=message,
        )
        return hashlib.sha1(repr((parent_sha, sorted(files.items(), key=str))).encode()).hexdigest()

    def find_dashboard_issue(self, repo: str) -> DashboardIssue | None:
        """The dashboard issue held, if any."""
        self._record("find_dashboard_issue", repo=repo)
        return self.dashboard

    def write_dashboard_issue(self, repo: str, number: int | None, title: str, body: str) -> DashboardIssue:
        """Hold the new text (a new issue when ``number`` is None)."""
        self._record("write_dashboard_issue", repo=repo, number=number, title=title, body=body)
        state = self.dashboard.state if self.dashboard is not None else "open"
        num = number if number is not None else self._new_id()
        self.dashboard = DashboardIssue(num, f"https://github.test/{repo}/issues/{num}", state, body)
        return self.dashboard

    def open_or_update_pr(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequestRef:
        """Open a PR for ``head`` once; later calls update it."""
        self._record("open_or_update_pr", repo=repo, head=head, base=base, title=title, body=body)
        with self._lock:
            existing = self.opened.get(head)
            if existing is not None:
                return PullRequestRef(existing.number, existing.url, created=False)
            number = len(self.opened) + 100
            ref = PullRequestRef(number, f"https://github.test/{repo}/pull/{number}")
            self.opened[head] = ref
            return ref

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
        """A new check run (in progress unless ``conclusion``)."""
        extra: dict[str, Any] = {}
        if external_id is not None:
            extra["external_id"] = external_id
        if conclusion is not None:
            extra["conclusion"] = conclusion
        if actions:
            extra["actions"] = [dict(a) for a in actions]
        self._record(
            "create_check_run", repo=repo, head_sha=head_sha, name=name, title=title, summary=summary, **extra
        )
        run_id = self._new_id()
        with self._lock:
            self.check_runs[run_id] = {
                "head_sha": head_sha,
                "conclusion": conclusion,
                "title": title,
                "summary": summary,
                **extra,
            }
        return run_id

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
        """Update the remembered check run (annotations accumulate, as on GitHub)."""
        extra: dict[str, Any] = {}
        if annotations:
            extra["annotations"] = [dict(a) for a in annotations]
        if actions is not None:
            extra["actions"] = [dict(a) for a in actions]
        self._record(
            "update_check_run",
            repo=repo,
            check_run_id=check_run_id,
            conclusion=conclusion,
            title=title,
            summary=summary,
            details=details,
            **extra,
        )
        with self._lock:
            check = self.check_runs.setdefault(check_run_id, {})
            check.update(conclusion=conclusion, title=title, summary=summary, details=details)
            if annotations:
                check.setdefault("annotations", []).extend(dict(a) for a in annotations)
            if actions is not None:
                check["actions"] = [dict(a) for a in actions]

    def create_or_edit_status_comment(
        self, repo: str, number: int, body: str, comment_id: int | None = None
    ) -> int:
        """Edit the comment when it exists, else create one."""
        self._record(
            "create_or_edit_status_comment", repo=repo, number=number, body=body, comment_id=comment_id
        )
        with self._lock:
            if comment_id is None or comment_id not in self.comments:
                comment_id = self._new_id()
            self.comments[comment_id] = (number, body)
        return comment_id

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None:
        """Record the reaction."""
        self._record("add_reaction", repo=repo, comment_id=comment_id, content=content)

    def checks_on(self, repo: str, sha: str) -> HeadChecks:
        """The configured runs and check runs of ``sha`` (none by default)."""
        self._record("checks_on", repo=repo, sha=sha)
        return self.head_checks.get(sha, HeadChecks())

    def reply_in_review_thread(
        self, repo: str, number: int, thread_id: int, body: str, reply_id: int | None = None
    ) -> int:
        """Record the reply (a new id unless ``reply_id`` is edited)."""
        self._record(
            "reply_in_review_thread",
            repo=repo,
            number=number,
            thread_id=thread_id,
            body=body,
            reply_id=reply_id,
        )
        return reply_id if reply_id is not None else self._new_id()


@dataclass
class FakeRepairService:
    """Returns ``outcome`` (a fix of ``app.py`` by default), or runs ``behaviour`` when given;
    records every plan it was given (``requests``) and its interrupt."""

    outcome: RepairReport = field(
        default_factory=lambda: RepairReport(
            verdict="fixed",
            fixed=True,
            reason="all target tests pass",
            patch="--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
            files={"app.py": "x = 2\n"},
            explanation="Set x to 2.",
            tier="small",
            rounds=2,
            spend=Spend(tokens=1234, usd=0.05),
            trace_path="/traces/fake.json",
        )
    )
    behaviour: Callable[[RepairPlan], RepairReport] | None = None
    requests: list[RepairPlan] = field(default_factory=list)
    interrupts: list[Interrupt | None] = field(default_factory=list)
    defaults: PlanDefaults = field(default_factory=lambda: PlanDefaults(use_index=False))
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def run(self, plan: RepairPlan, *, interrupt: Interrupt | None = None) -> RepairReport:
        """Record the plan and answer; like the loop, ask the interrupt first (a reason ->
        verdict ``interrupted``, nothing spent)."""
        with self._lock:
            self.requests.append(plan)
            self.interrupts.append(interrupt)
        reason = interrupt.check() if interrupt is not None else None
        if reason:
            return RepairReport(verdict="interrupted", fixed=False, reason=reason, tier=self.outcome.tier)
        if self.behaviour is not None:
            return self.behaviour(plan)
        return self.outcome


@dataclass
class FakeIndexService:
    """Records refreshes."""

    refreshed: list[tuple[str, bool]] = field(default_factory=list)

    def refresh(self, repo: str, workdir: Path, *, full: bool) -> Mapping[str, Any]:
        """Record and report one file indexed."""
        self.refreshed.append((repo, full))
        return {"files": sum(1 for p in workdir.rglob("*") if p.is_file()), "full": full}


if TYPE_CHECKING:
    # The fakes must keep satisfying the ports (checked by mypy, nothing runs).
    from jobs.ports import GitHubGateway, IndexService, RepairService

    _gateway: GitHubGateway = FakeGitHubGateway()
    _repair: RepairService = FakeRepairService()
    _index: IndexService = FakeIndexService()
