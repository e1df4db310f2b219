"""The real :class:`jobs.ports.GitHubGateway`: one installation's GitHub operations for the job
pipeline, on top of :mod:`bot.github.publish`, :mod:`bot.github.logs` and :mod:`bot.github.git`.

Least privilege per operation: each repository gets up to three installation tokens, minted on
first use and narrowed to that one repository —

- *read* (clone, ``.arcs.yml``, logs, issue/PR/permission reads): nothing is writable, so the
  token used next to untrusted code in a checkout cannot push;
- *comment* (reactions, the status comment, the check run): no access to code;
- *publish* (push the ``arcs/`` branch, open/update the pull request, label it).

Tokens refresh themselves before they expire; :meth:`AppGitHubGateway.close` revokes them all (use
the gateway as a context manager, or ``contextlib.closing``).

``draft`` and labels of pull requests come from the repository's ``.arcs.yml`` (``draft``,
``pr_labels``), read once per gateway.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import structlog

from bot.errors import ConfigError
from bot.github import GitHubError
from bot.github.auth import (
    COMMENT_PERMISSIONS,
    PUBLISH_PERMISSIONS,
    READ_PERMISSIONS,
    RERUN_PERMISSIONS,
    Permissions,
)
from bot.github.client import GitHubApp, InstallationClient, github_errors
from bot.github.git import BotIdentity, clone_at_sha, fetch_history
from bot.github.issues import find_dashboard_issue, write_dashboard_issue
from bot.github.logs import concatenate, download_failed_job_logs
from bot.github.publish import (
    add_reaction,
    bot_user_id,
    commit_on_top,
    create_check_run,
    ensure_branch_pushed,
    open_or_update_pr,
    read_file,
    reply_in_review_thread,
    repository,
    update_check_run,
    upsert_status_comment,
)
from bot.settings import Settings
from jobs.config import ArcsConfig, ArcsConfigError, RepoConfig, parse_repo_config
from jobs.config import load as load_arcs_config
from jobs.ports import (
    BranchHead,
    DashboardIssue,
    HeadChecks,
    IssueInfo,
    PullRequestInfo,
    PullRequestRef,
    RunState,
    WorkflowRunRef,
)
from jobs.render_checks import annotation_batches

log = structlog.get_logger(__name__)

Scope = Literal["read", "comment", "publish", "rerun"]
SCOPES: Mapping[Scope, Permissions] = {
    "read": READ_PERMISSIONS,
    "comment": COMMENT_PERMISSIONS,
    "publish": PUBLISH_PERMISSIONS,
    "rerun": RERUN_PERMISSIONS,
}
ROLES = frozenset({"admin", "maintain", "write", "triage", "read", "none"})


def _split(repo: str) -> tuple[str, str]:
    owner, sep, name = repo.partition("/")
    if not sep or not owner or not name or "/" in name:
        raise ValueError(f"repository must be 'owner/name', got {repo!r}")
    return owner, name


class AppGitHubGateway:
    """GitHub for one installation (``installation_id`` None: looked up per repository)."""

    def __init__(
        self,
        app: GitHubApp,
        installation_id: int | None,
        *,
        bot_login: str = "arcs[bot]",
        attempt: str | None = None,
        workdir: Path | None = None,
    ) -> None:
        self.app = app
        self.installation_id = installation_id
        self.bot_login = bot_login
        self.attempt = attempt
        """Goes into the ``ARCS-Attempt`` trailer when a commit message has none."""
        self.workdir = workdir
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, Scope], InstallationClient] = {}
        self._installations: dict[str, int] = {}
        self._configs: dict[str, ArcsConfig] = {}
        self._identity: BotIdentity | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"AppGitHubGateway(installation_id={self.installation_id}, clients={len(self._clients)})"

    # --- plumbing ----------------------------------------------------------------------------------

    def _installation(self, repo: str) -> int:
        if self.installation_id is not None:
            return self.installation_id
        if repo not in self._installations:
            owner, name = _split(repo)
            self._installations[repo] = self.app.repo_installation_id(owner, name)
        return self._installations[repo]

    def client(self, repo: str, scope: Scope = "read") -> InstallationClient:
        """The client for ``repo`` with the permissions of ``scope`` (created on first use)."""
        _split(repo)
        with self._lock:
            if self._closed:
                raise GitHubError("the GitHub gateway was closed")
            key = (repo, scope)
            client = self._clients.get(key)
            if client is None:
                client = self.app.installation(
                    self._installation(repo), repository=repo, permissions=SCOPES[scope]
                )
                self._clients[key] = client
            return client

    def close(self) -> None:
        """Revoke every token this gateway minted (idempotent)."""
        with self._lock:
            self._closed = True
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()

    def __enter__(self) -> AppGitHubGateway:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def identity(self, repo: str) -> BotIdentity:
        """The bot's commit identity (its user id read once; the App id when it cannot be)."""
        if self._identity is None:
            user_id = bot_user_id(self.client(repo, "read"), self.bot_login)
            self._identity = BotIdentity.for_app(
                user_id if user_id is not None else self.app.credentials.app_id, login=self.bot_login
            )
        return self._identity

    # --- reads ---------------------------------------------------------------------------------

    def get_permission(self, repo: str, user: str) -> str:
        """``user``'s role on ``repo``: admin, maintain, write, triage, read or none."""
        client = self.client(repo, "read")
        with github_errors(f"read {user}'s permission on {repo}"):
            data: Any = client.gh.rest.repos.get_collaborator_permission_level(
                client.owner, client.repo, user
            ).json()
        role = str(data.get("role_name") or "")
        return role if role in ROLES else str(data.get("permission") or "none")

    def get_issue(self, repo: str, number: int) -> IssueInfo:
        """The issue as it is now."""
        client = self.client(repo, "read")
        with github_errors(f"read issue #{number} of {repo}"):
            data: Any = client.gh.rest.issues.get(client.owner, client.repo, number).json()
        return IssueInfo(
            number=int(data["number"]),
            title=str(data.get("title") or ""),
            body=str(data.get("body") or ""),
            state=str(data.get("state") or "open"),
            labels=tuple(
                str(label.get("name")) for label in data.get("labels") or [] if isinstance(label, dict)
            ),
            author=(data.get("user") or {}).get("login"),
        )

    def get_pull_request(self, repo: str, number: int) -> PullRequestInfo:
        """The pull request's head and base as they are now."""
        client = self.client(repo, "read")
        with github_errors(f"read pull request #{number} of {repo}"):
            data: Any = client.gh.rest.pulls.get(client.owner, client.repo, number).json()
        head = data.get("head") or {}
        return PullRequestInfo(
            number=int(data["number"]),
            head_sha=str(head.get("sha") or ""),
            head_branch=str(head.get("ref") or ""),
            base_branch=str((data.get("base") or {}).get("ref") or ""),
            url=str(data.get("html_url") or ""),
            state=str(data.get("state") or "open"),
            author=(data.get("user") or {}).get("login"),
            head_repo=((head.get("repo") or {}).get("full_name")),
        )

    def get_branch_head(self, repo: str, branch: str | None = None) -> BranchHead:
        """The commit ``branch`` (default: the default branch) points at."""
        client = self.client(repo, "read")
        name = branch or str(repository(client)["default_branch"])
        with github_errors(f"read branch {name} of {repo}"):
            data: Any = client.gh.rest.git.get_ref(client.owner, client.repo, f"heads/{name}").json()
        return BranchHead(name=name, sha=str(data["object"]["sha"]))

    def download_failed_logs(self, repo: str, run_id: int) -> str:
        """The failed jobs' logs of the run's latest attempt, concatenated with job headers."""
        logs = download_failed_job_logs(self.client(repo, "read"), run_id)
        if not logs:
            raise GitHubError(f"workflow run {run_id} of {repo} has no failed job")
        return concatenate(logs)

    def rerun_failed_jobs(self, repo: str, run_id: int) -> None:
        """Ask GitHub to re-run the failed jobs of workflow run ``run_id`` (``actions: write``)."""
        client = self.client(repo, "rerun")
        with github_errors(f"re-run the failed jobs of workflow run {run_id} of {repo}"):
            client.gh.rest.actions.re_run_workflow_failed_jobs(client.owner, client.repo, run_id)

    def clone(self, repo: str, sha: str, dest: Path) -> None:
        """Check out ``sha`` into ``dest`` with a read-only token that never touches the disk."""
        client = self.client(repo, "read")
        clone_url = str(repository(client).get("clone_url") or "")
        clone_at_sha(clone_url, sha, Path(dest), source=client.tokens)

    def fetch_history(self, repo: str, dest: Path, shas: Sequence[str], *, depth: int) -> None:
        """Deepen the checkout :meth:`clone` made to ``depth`` commits behind each of ``shas``
        (read-only token, kept off disk)."""
        client = self.client(repo, "read")
        fetch_history(Path(dest), list(shas), depth=depth, source=client.tokens)

    def last_successful_run(self, repo: str, workflow_id: int, branch: str) -> WorkflowRunRef | None:
        """The newest successful run of the workflow on ``branch`` (``actions: read``)."""
        client = self.client(repo, "read")
        with github_errors(f"list the successful runs of workflow {workflow_id} on {branch} of {repo}"):
            data: Any = client.gh.rest.actions.list_workflow_runs(
                client.owner,
                client.repo,
                workflow_id,
                branch=branch,
                status="success",
                exclude_pull_requests=True,
                per_page=1,
            ).json()
        runs = data.get("workflow_runs") if isinstance(data, dict) else None
        for run in runs or []:
            sha = str(run.get("head_sha") or "") if isinstance(run, dict) else ""
            if sha:
                return WorkflowRunRef(
                    id=int(run.get("id") or 0), head_sha=sha, head_branch=str(run.get("head_branch") or "")
                )
        return None

    def checks_on(self, repo: str, sha: str) -> HeadChecks:
        """The workflow runs (``actions: read``) and every app's check runs (``checks``) on ``sha``:
        the first page of each is enough to tell whether anything started."""
        client = self.client(repo, "read")
        with github_errors(f"list the workflow runs of {sha[:7]} in {repo}"):
            data: Any = client.gh.rest.actions.list_workflow_runs_for_repo(
                client.owner, client.repo, head_sha=sha, per_page=100
            ).json()
        runs = [r for r in (data.get("workflow_runs") or []) if isinstance(r, dict)]
        checks = self.client(repo, "comment")  # checks: write, which reads too
        with github_errors(f"list the check runs of {sha[:7]} in {repo}"):
            found: Any = checks.gh.rest.checks.list_for_ref(
                checks.owner, checks.repo, sha, per_page=100
            ).json()
        check_runs = [c for c in (found.get("check_runs") or []) if isinstance(c, dict)]
        return HeadChecks(
            runs=tuple(
                RunState(
                    name=str(r.get("name") or "a workflow"),
                    status=str(r.get("status") or ""),
                    conclusion=r.get("conclusion"),
                    html_url=r.get("html_url"),
                )
                for r in runs
            ),
            check_runs=tuple(str(c.get("name") or "") for c in check_runs),
        )

    def load_arcs_config(self, repo: str, ref: str | None = None) -> ArcsConfig:
        """The full ``.arcs.yml`` at ``ref`` (default branch when None); ConfigError names the key.

        ``extends: <org>/.github`` is followed: that repository's config, at its default branch,
        under this one's keys (the App must be installed on it)."""
        client = self.client(repo, "read")
        config = load_arcs_config(lambda path: read_file(client, path, ref=ref), org=self.org_reader)
        self._configs[repo] = config
        return config

    def org_reader(self, org_repo: str) -> Callable[[str], str | None]:
        """Reads ``org_repo``'s files at its default branch (``extends:``); a failure is the
        config's error."""

        def read(path: str) -> str | None:
            try:
                return read_file(self.client(org_repo, "read"), path)
            except GitHubError as exc:
                raise ArcsConfigError(f"extends: cannot read {org_repo}: {exc}", key="extends") from exc

        return read

    def load_repo_config(self, repo: str, ref: str) -> RepoConfig:
        """The runner part of ``.arcs.yml`` at ``ref``, after validating the whole file.

        App keys (``triggers``, ``branches``, ``label``, …) stay in ``extra`` as written.
        """
        client = self.client(repo, "read")
        texts: dict[str, str] = {}

        def read(path: str) -> str | None:
            text = read_file(client, path, ref=ref)
            if text is not None:
                texts[path] = text
            return text

        config = load_arcs_config(read, org=self.org_reader)
        self._configs[repo] = config
        if not texts:
            return RepoConfig()
        path, text = next(iter(texts.items()))
        return parse_repo_config(text, path=Path(path))

    def _pr_settings(self, repo: str) -> ArcsConfig:
        config = self._configs.get(repo)
        if config is None:
            try:
                config = self.load_arcs_config(repo)
            except ConfigError:
                # The pipeline reports config errors where it reads the config; publishing a
                # verified fix falls back to the safe defaults (draft, label "arcs").
                config = ArcsConfig()
        return config

    # --- writes --------------------------------------------------------------------------------

    def push_branch(
        self, repo: str, branch: str, base_sha: str, files: Mapping[str, str | None], message: str
    ) -> str:
        """One bot commit on ``base_sha`` writing ``files``, pushed to the ``arcs/`` ``branch``."""
        client = self.client(repo, "publish")
        return ensure_branch_pushed(
            client,
            branch=branch,
            base_sha=base_sha,
            files=files,
            message=message,
            identity=self.identity(repo),
            attempt=self.attempt or branch,
            workdir=self.workdir,
        )

    def commit_on_top(
        self, repo: str, branch: str, parent_sha: str, files: Mapping[str, str | None], message: str
    ) -> str | None:
        """One bot commit on ``parent_sha`` pushed on top of a pull request's ``branch`` while it is
        still there (``auto_apply``); its sha, or None when the branch moved or refused it."""
        return commit_on_top(
            self.client(repo, "publish"),
            branch=branch,
            parent_sha=parent_sha,
            files=files,
            message=message,
            identity=self.identity(repo),
            attempt=self.attempt or branch,
            workdir=self.workdir,
        )

    def find_dashboard_issue(self, repo: str) -> DashboardIssue | None:
        """The bot's dashboard issue of ``repo`` (:mod:`bot.github.issues`), or None."""
        return find_dashboard_issue(self.client(repo, "comment"), bot_login=self.bot_login)

    def write_dashboard_issue(self, repo: str, number: int | None, title: str, body: str) -> DashboardIssue:
        """Edit the dashboard issue in place, or open it (:mod:`bot.github.issues`)."""
        return write_dashboard_issue(self.client(repo, "comment"), number=number, title=title, body=body)

    def open_or_update_pr(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequestRef:
        """Open (draft unless ``.arcs.yml`` says ``draft: false``) or update the PR for ``head``."""
        config = self._pr_settings(repo)
        return open_or_update_pr(
            self.client(repo, "publish"),
            head=head,
            base=base,
            title=title,
            body=body,
            draft=config.draft,
            labels=config.pr_labels,
        )

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
        """A check run on ``head_sha``: in progress, or completed with ``conclusion``."""
        return create_check_run(
            self.client(repo, "comment"),
            head_sha=head_sha,
            name=name,
            status="in_progress",
            output={"title": title, "summary": summary},
            external_id=external_id,
            conclusion=conclusion,
            actions=actions,
        )

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
        """Update the check run; a ``conclusion`` completes it. ``annotations`` go in batches of
        50 (GitHub's limit per request): the first with the update, the rest in follow-up
        updates of the same output (GitHub appends them)."""
        output = {"title": title, "summary": summary}
        if details:
            output["text"] = details
        client = self.client(repo, "comment")
        batches = annotation_batches(annotations)
        update_check_run(
            client,
            check_run_id,
            output=output,
            status=None if conclusion else "in_progress",
            conclusion=conclusion,
            annotations=batches[0] if batches else (),
            actions=actions,
        )
        for batch in batches[1:]:
            update_check_run(client, check_run_id, output=output, annotations=batch)

    def create_or_edit_status_comment(
        self, repo: str, number: int, body: str, comment_id: int | None = None
    ) -> int:
        """Edit the status comment (by id, else by its hidden marker) or create it."""
        return upsert_status_comment(
            self.client(repo, "comment"), number, body, bot_login=self.bot_login, comment_id=comment_id
        )

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None:
        """React to an issue comment."""
        add_reaction(self.client(repo, "comment"), comment_id, content)

    def reply_in_review_thread(
        self, repo: str, number: int, thread_id: int, body: str, reply_id: int | None = None
    ) -> int:
        """Reply in a pull request review thread (edit the earlier reply ``reply_id`` in place)."""
        return reply_in_review_thread(
            self.client(repo, "comment"), number, thread_id, body, reply_id=reply_id
        )


class GatewayFactory:
    """``installation_id -> gateway`` for :class:`jobs.pipeline.Deps` (``Deps.github``), sharing one
    :class:`GitHubApp` (its connection pool and per-installation mutation lanes)."""

    def __init__(
        self, settings: Settings, *, app: GitHubApp | None = None, workdir: Path | None = None
    ) -> None:
        self._owns_app = app is None
        self.app = app or GitHubApp.from_settings(settings)
        self.bot_login = settings.bot_login
        self.workdir = workdir

    def __call__(self, installation_id: int | None) -> AppGitHubGateway:
        return AppGitHubGateway(self.app, installation_id, bot_login=self.bot_login, workdir=self.workdir)

    def close(self) -> None:
        """Close the shared connection pool (when this factory created the app)."""
        if self._owns_app:
            self.app.close()


def gateway_factory(
    settings: Settings,
    *,
    app: GitHubApp | None = None,
    workdir: Path | None = None,
) -> GatewayFactory:
    """The worker's ``Deps.github``: ``gateway_factory(settings)`` (close it at shutdown)."""
    return GatewayFactory(settings, app=app, workdir=workdir)
